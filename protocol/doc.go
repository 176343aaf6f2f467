// Package protocol frames Kafka requests and responses on the wire. Which API
// keys and versions are served is the broker's registry, not this package's.
//
// Every request on a connection is a 4-byte big-endian size followed by that
// many bytes: a request header (api key, api version, correlation id, client
// id and, for flexible versions, tagged fields) and the body, which kmsg
// decodes. Responses carry the same correlation id in a response header: v0
// (correlation id only) for non-flexible versions and for ApiVersions at any
// version (KIP-511), v1 (plus an empty tag section) otherwise.
//
// The package is a leaf: it knows nothing of storage or the broker.
package protocol
