package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ScramMechanism is one of Kafka's SCRAM mechanisms, by Kafka's id
// (org.apache.kafka.clients.admin.ScramMechanism).
type ScramMechanism int8

// Kafka's SCRAM mechanisms.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// UserScramCredentialRecord sets the credential of user Name for one
// mechanism (Kafka's UserScramCredentialRecord): what the server keeps of
// a password, never the password.
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  ScramMechanism
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// RemoveUserScramCredentialRecord removes the credential of user Name for
// one mechanism (Kafka's RemoveUserScramCredentialRecord).
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism ScramMechanism
}

func (UserScramCredentialRecord) record()             {}
func (RemoveUserScramCredentialRecord) record()       {}
func (UserScramCredentialRecord) accessRecord()       {}
func (RemoveUserScramCredentialRecord) accessRecord() {}

// ScramCredential is what the server keeps of one user's password for one
// mechanism (RFC 5802's salt, StoredKey, ServerKey and iteration count).
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramUser names one user's credential for one mechanism.
type ScramUser struct {
	Name      string
	Mechanism ScramMechanism
}

// ScramImage is the SCRAM credentials (Kafka's ScramImage).
type ScramImage struct {
	creds map[ScramUser]ScramCredential
}

// Credential is user's credential, ok false if there is none.
func (s ScramImage) Credential(user ScramUser) (ScramCredential, bool) {
	c, ok := s.creds[user]
	return c, ok
}

// Users lists the users with a credential, each with its mechanisms, by
// name and then mechanism.
func (s ScramImage) Users() []ScramUser {
	return slices.SortedFunc(maps.Keys(s.creds), func(a, b ScramUser) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Mechanism) - int(b.Mechanism)
	})
}

func (s ScramImage) records() []Record {
	var out []Record
	for _, u := range s.Users() {
		c := s.creds[u]
		out = append(out, UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism,
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	return out
}

// scramDelta is the changed credentials; a nil value is a removed one.
type scramDelta struct {
	changed map[ScramUser]*ScramCredential
}

func (d *scramDelta) put(r UserScramCredentialRecord) {
	if d.changed == nil {
		d.changed = map[ScramUser]*ScramCredential{}
	}
	d.changed[ScramUser{r.Name, r.Mechanism}] = &ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
}

func (d *scramDelta) remove(base ScramImage, r RemoveUserScramCredentialRecord) error {
	u := ScramUser{r.Name, r.Mechanism}
	c, changed := d.changed[u]
	if _, had := base.creds[u]; (changed && c == nil) || (!changed && !had) {
		return fmt.Errorf("%w: remove unknown SCRAM credential of %q (mechanism %d)", ErrInvalidRecord, r.Name, r.Mechanism)
	}
	if d.changed == nil {
		d.changed = map[ScramUser]*ScramCredential{}
	}
	d.changed[u] = nil
	return nil
}

func (d *scramDelta) apply(base ScramImage) ScramImage {
	if d.changed == nil {
		return base
	}
	creds := maps.Clone(base.creds)
	if creds == nil {
		creds = map[ScramUser]ScramCredential{}
	}
	for u, c := range d.changed {
		if c == nil {
			delete(creds, u)
		} else {
			creds[u] = *c
		}
	}
	return ScramImage{creds: creds}
}
