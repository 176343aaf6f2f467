package broker

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// plainServer is SASL/PLAIN (RFC 4616): one client message, [authzid] NUL
// authcid NUL passwd, checked as Kafka's PlainSaslServer and
// PlainServerCallbackHandler check it, with their messages.
type plainServer struct {
	users map[string]string // user_<name> options of PlainLoginModule
	user  string
}

func (s *plainServer) step(msg []byte) ([]byte, bool, error) {
	user, err := plainAuthenticate(s.users, msg)
	if err != nil {
		return nil, false, err
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainServer) principal() string { return s.user }

// plainAuthenticate checks msg against users and returns its user. The
// password is compared in constant time, and so is an unknown user's,
// against nothing.
func plainAuthenticate(users map[string]string, msg []byte) (string, error) {
	tokens := strings.Split(string(msg), "\x00")
	if len(tokens) != 3 {
		return "", fmt.Errorf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", min(len(tokens), 4))
	}
	authzid, user, password := tokens[0], tokens[1], tokens[2]
	if user == "" {
		return "", errors.New("Authentication failed: username not specified")
	}
	if password == "" {
		return "", errors.New("Authentication failed: password not specified")
	}
	want, known := users[user]
	got, expected := sha256.Sum256([]byte(password)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], expected[:]) != 1 || !known {
		return "", errors.New("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return "", errors.New("Authentication failed: Client requested an authorization id that is different from username")
	}
	return user, nil
}
