package configdef

import "strings"

// sslReconfigurable are the ssl.* keys of a listener that change
// dynamically (Kafka's SslConfigs.RECONFIGURABLE_CONFIGS): a listener's
// key and trust stores. Kafka takes them per broker only, and only with
// the listener prefix (listener.name.<listener>.<key>).
var sslReconfigurable = map[string]bool{
	"ssl.keystore.type":              true,
	"ssl.keystore.location":          true,
	"ssl.keystore.password":          true,
	"ssl.key.password":               true,
	"ssl.truststore.type":            true,
	"ssl.truststore.location":        true,
	"ssl.truststore.password":        true,
	"ssl.keystore.certificate.chain": true,
	"ssl.keystore.key":               true,
	"ssl.truststore.certificates":    true,
}

// sensitiveSSL are the ssl.* keys of type PASSWORD, whose values
// DescribeConfigs never shows.
var sensitiveSSL = map[string]bool{
	"ssl.keystore.password":   true,
	"ssl.key.password":        true,
	"ssl.truststore.password": true,
	"ssl.keystore.key":        true,
}

// IsSSLReconfigurable says whether key, without a listener prefix, is one
// of a listener's dynamic ssl.* keys.
func IsSSLReconfigurable(key string) bool { return sslReconfigurable[key] }

// ListenerSSLKey splits a dynamic listener key, listener.name.<listener>.<key>
// with key one of a listener's dynamic ssl.* keys; listener is as written
// (Kafka's prefix is the listener's name in lower case).
func ListenerSSLKey(name string) (listener, key string, ok bool) {
	rest, found := strings.CutPrefix(name, "listener.name.")
	if !found {
		return "", "", false
	}
	listener, key, found = strings.Cut(rest, ".")
	if !found || listener == "" || !sslReconfigurable[key] {
		return "", "", false
	}
	return listener, key, true
}

// ListenerSSLType is the type of a dynamic listener key.
func ListenerSSLType(key string) Type {
	if sensitiveSSL[key] {
		return Password
	}
	return String
}

// IsSensitive says whether a broker config's value is a secret
// (type PASSWORD in Kafka): DescribeConfigs reports it as sensitive and
// without its value.
func IsSensitive(name string) bool {
	if _, key, ok := ListenerSSLKey(name); ok {
		return sensitiveSSL[key]
	}
	return sensitiveSSL[name]
}
