// Package broker serves the Kafka protocol over TCP: listeners, one goroutine
// per connection, and one file per API key (named after the key) that opens
// with where it differs from Apache Kafka and registers its versions and
// handler with the broker's registry (handlers.go). A handler sees a
// reqCtx (reqctx.go): the request, who sent it, and what of the broker it
// may use.
//
// A connection handles its requests one at a time, in order, as Kafka does
// (Kafka mutes a channel while a request is in flight), so pipelined
// requests are answered in the order they were sent and a long-polling fetch
// holds back later requests on the same connection only.
package broker
