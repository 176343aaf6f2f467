package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// TopicIDString renders a topic id as Kafka does (Uuid.toString):
// URL-safe base64 without padding, 22 characters.
func TopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// NewTopicID draws a random id no topic of the image has, as the Kafka
// controller does.
func (t TopicsImage) NewTopicID() ([16]byte, error) {
	return RandomUUID(func(u [16]byte) bool { return t.byID[u] != nil })
}

// RandomUUID draws an id as Kafka's Uuid.randomUuid: a version-4 uuid,
// never the zero id, Kafka's metadata topic id (0...01), one whose string
// form starts with '-' (a URL-safe base64 first character 62) or one taken
// says is in use.
func RandomUUID(taken func([16]byte) bool) ([16]byte, error) {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return u, fmt.Errorf("random uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if u == ([16]byte{}) || u == ([16]byte{15: 1}) || u[0]>>2 == 62 || taken(u) {
			continue
		}
		return u, nil
	}
}
