package broker

// SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), as Kafka's
// ScramSaslServer serves them (4.1), with the credentials of the metadata
// image (UserScramCredentialRecord, set by AlterUserScramCredentials):
//
//   - two rounds: the client's first message gets the server's first
//     (the client's nonce with the server's, the credential's salt and
//     iterations), the client's final message, checked through the
//     credential's StoredKey, gets the server's final, the ServerKey's
//     signature; the principal is then User:<name>;
//   - the messages are parsed with Kafka's patterns: the GS2 header is
//     "n," (no channel binding) with an optional authzid, which must be the
//     user; the channel binding the final message carries is not checked,
//     as Kafka does not; extensions are read, only tokenauth=true means
//     anything: the user is then a delegation token's id and the password
//     its HMAC (delegationtoken_auth.go), the principal the token's owner,
//     and the session ends no later than the token expires, as Kafka's
//     DelegationTokenCredentialCallback has it; an unknown token id is
//     "Invalid tokenId";
//   - a failure whose message Kafka sends (its SaslAuthenticationException:
//     the authzid) is answered with it, any other with Kafka's
//     "Authentication failed during authentication due to invalid
//     credentials with SASL mechanism <mechanism>", the real cause only
//     logged; a proof of the wrong length, on which Kafka's server throws
//     out of the exchange, closes the connection without an answer.
//
// Where Kafka refuses an unknown user on its first message, Strata answers
// it with a fake credential (a salt derived from the user with a key of
// this process, 4096 iterations) and refuses it on its final message, as
// it refuses a wrong password and in the same time: the answer a client
// gets is the same message either way, but which round refuses it no
// longer tells whether the user exists.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-io/strata/metadata"
)

// Kafka's SCRAM mechanisms, by their SASL names.
const (
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on a credential's iterations (ScramMechanism's
// minIterations, ScramControlManager.MAX_ITERATIONS).
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// scramMechanism is one SCRAM mechanism: its SASL name, Kafka's id and
// its hash.
type scramMechanism struct {
	name string
	id   metadata.ScramMechanism
	hash func() hash.Hash
}

var scramMechanisms = []scramMechanism{
	{MechanismScramSHA256, metadata.ScramSHA256, sha256.New},
	{MechanismScramSHA512, metadata.ScramSHA512, sha512.New},
}

// scramMechanismNamed is the SCRAM mechanism of a SASL name.
func scramMechanismNamed(name string) (scramMechanism, bool) {
	for _, m := range scramMechanisms {
		if m.name == name {
			return m, true
		}
	}
	return scramMechanism{}, false
}

// scramMechanismOf is the SCRAM mechanism of Kafka's id.
func scramMechanismOf(id metadata.ScramMechanism) (scramMechanism, bool) {
	for _, m := range scramMechanisms {
		if m.id == id {
			return m, true
		}
	}
	return scramMechanism{}, false
}

// enumName is the mechanism as Kafka's ScramMechanism enum prints it.
func (m scramMechanism) enumName() string { return strings.ReplaceAll(m.name, "-", "_") }

func (m scramMechanism) hmac(key, msg []byte) []byte {
	h := hmac.New(m.hash, key)
	h.Write(msg)
	return h.Sum(nil)
}

// credential is what AlterUserScramCredentials keeps of a salted password,
// as Kafka's ScramFormatter derives it: StoredKey H(HMAC(salted, "Client
// Key")) and ServerKey HMAC(salted, "Server Key").
func (m scramMechanism) credential(saltedPassword []byte) (storedKey, serverKey []byte) {
	h := m.hash()
	h.Write(m.hmac(saltedPassword, []byte("Client Key")))
	return h.Sum(nil), m.hmac(saltedPassword, []byte("Server Key"))
}

// Kafka's ScramMessages patterns, their Java character-class intersections
// written out as ranges.
const (
	scramValue     = `[\x01-\x2B\x2D-\x7F]+`
	scramPrintable = `[\x21-\x2B\x2D-\x7E]+`
	scramSaslName  = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+`
	scramBase64    = `(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?`
	scramExtension = `(?:,[A-Za-z]+=` + scramValue + `)*`
)

var (
	scramClientFirst = regexp.MustCompile(`^n,(?:a=(?P<authzid>` + scramSaslName + `))?,(?:m=` + scramValue + `,)?n=(?P<saslname>` + scramSaslName +
		`),r=(?P<nonce>` + scramPrintable + `)(?P<extensions>` + scramExtension + `)$`)
	scramClientFinal = regexp.MustCompile(`^c=(?P<channel>` + scramBase64 + `),r=(?P<nonce>` + scramPrintable + `)` + scramExtension +
		`,p=(?P<proof>` + scramBase64 + `)$`)
)

// saslAuthenticationError is a failed authentication whose message the
// client is sent (Kafka's SaslAuthenticationException); a mechanism's other
// errors are answered with Kafka's generic message.
type saslAuthenticationError struct{ msg string }

func (e *saslAuthenticationError) Error() string { return e.msg }

// saslAbort is a failure that ends the connection without an answer, as
// an exception other than a SaslException does in Kafka's authenticator.
type saslAbort struct{ cause error }

func (e *saslAbort) Error() string { return e.cause.Error() }
func (e *saslAbort) Unwrap() error { return e.cause }

// scramCredentials looks a user's credential up.
type scramCredentials func(metadata.ScramUser) (metadata.ScramCredential, bool)

// tokenLogin is what a SCRAM exchange authenticating a delegation token
// needs of it: the credential its HMAC derives for the mechanism, its owner
// (the principal) and when it expires.
type tokenLogin struct {
	cred   metadata.ScramCredential
	owner  string
	expiry time.Time
}

// tokenCredentials looks a delegation token up by its id; nil where tokens
// do not authenticate (the nodes' own logins).
type tokenCredentials func(tokenID string, m scramMechanism) (tokenLogin, bool)

type scramState int

const (
	scramClientFirstState scramState = iota
	scramClientFinalState
	scramComplete
	scramFailed
)

// scramServer is the server side of one SCRAM exchange (Kafka's
// ScramSaslServer).
type scramServer struct {
	mech        scramMechanism
	credentials scramCredentials
	tokens      tokenCredentials
	state       scramState

	clientFirstBare string // as Kafka rebuilds it: n=<saslname>,r=<nonce>[,extensions]
	serverFirst     string
	nonce           string // the client's nonce and the server's
	cred            metadata.ScramCredential
	known           bool // cred is the user's, not a fake one
	user            string
	// token is the delegation token authenticated by, when the client asked
	// for token authentication (user is then its id).
	token *tokenLogin
}

func newScramServer(mech scramMechanism, credentials scramCredentials, tokens tokenCredentials) *scramServer {
	return &scramServer{mech: mech, credentials: credentials, tokens: tokens}
}

// step evaluates the client's next message: the challenge to send, done
// once the client is authenticated (as s.user).
func (s *scramServer) step(token []byte) (challenge []byte, done bool, err error) {
	switch s.state {
	case scramClientFirstState:
		challenge, err = s.clientFirst(token)
		s.state = scramClientFinalState
	case scramClientFinalState:
		challenge, err = s.clientFinal(token)
		done, s.state = err == nil, scramComplete
	default:
		err = &saslAbort{fmt.Errorf("Unexpected challenge in Sasl server state %d", s.state)}
	}
	if err != nil {
		s.state, s.cred = scramFailed, metadata.ScramCredential{}
		// The client is told a SaslAuthenticationException's message;
		// Kafka's SaslServerAuthenticator hides a SaslException's cause,
		// which may tell whether the user exists; any other failure
		// closes the connection unanswered.
		var abort *saslAbort
		var public *saslAuthenticationError
		switch {
		case errors.As(err, &abort):
			return nil, false, fmt.Errorf("%w: %w", errSASLUnanswered, abort.cause)
		case errors.As(err, &public):
			return nil, false, err
		default:
			return nil, false, fmt.Errorf("%w: %w", errSASLInvalidCredentials, err)
		}
	}
	return challenge, done, nil
}

// principal is the authenticated user, once step is done.
func (s *scramServer) principal() string { return s.user }

// tokenOwner is the owner of the delegation token the client authenticated
// with, ok false when it authenticated as a user.
func (s *scramServer) tokenOwner() (owner string, ok bool) {
	if s.token == nil {
		return "", false
	}
	return s.token.owner, true
}

// expiry is when the delegation token authenticated with expires; zero for a
// user's credential, which does not.
func (s *scramServer) expiry() time.Time {
	if s.token == nil {
		return time.Time{}
	}
	return s.token.expiry
}

func (s *scramServer) clientFirst(token []byte) ([]byte, error) {
	m := scramClientFirst.FindSubmatch(token)
	if m == nil {
		return nil, fmt.Errorf("Invalid SCRAM client first message format: %s", quoteClientMessage(token))
	}
	authzid, saslName, clientNonce := string(m[1]), string(m[2]), string(m[3])
	extensions, order := scramExtensions(string(m[4]))
	s.clientFirstBare = "n=" + saslName + ",r=" + clientNonce
	for _, k := range order {
		s.clientFirstBare += "," + k + "=" + extensions[k]
	}
	serverNonce, err := scramNonce()
	if err != nil {
		return nil, &saslAbort{err}
	}
	user, err := scramUsername(saslName)
	if err != nil {
		return nil, fmt.Errorf("Authentication failed: Credentials could not be obtained: %w", err)
	}
	if strings.EqualFold(extensions["tokenauth"], "true") {
		var login tokenLogin
		var ok bool
		if s.tokens != nil {
			login, ok = s.tokens(user, s.mech)
		}
		if !ok {
			return nil, fmt.Errorf("Token Authentication failed: Invalid tokenId : %s", user)
		}
		s.cred, s.known, s.token = login.cred, true, &login
	} else {
		s.cred, s.known = s.credentials(metadata.ScramUser{Name: user, Mechanism: s.mech.id})
		if !s.known {
			s.cred = fakeScramCredential(s.mech, user)
		}
	}
	if authzid != "" && authzid != user {
		return nil, &saslAuthenticationError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	if s.cred.Iterations < scramMinIterations {
		return nil, fmt.Errorf("Iterations %d is less than the minimum %d for %s", s.cred.Iterations, scramMinIterations, s.mech.enumName())
	}
	s.user, s.nonce = user, clientNonce+serverNonce
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(int(s.cred.Iterations))
	return []byte(s.serverFirst), nil
}

func (s *scramServer) clientFinal(token []byte) ([]byte, error) {
	m := scramClientFinal.FindSubmatch(token)
	if m == nil {
		return nil, fmt.Errorf("Invalid SCRAM client final message format: %s", quoteClientMessage(token))
	}
	channel, _ := base64.StdEncoding.DecodeString(string(m[1])) // the pattern admits only base64
	proof, _ := base64.StdEncoding.DecodeString(string(m[3]))
	if string(m[2]) != s.nonce {
		return nil, errors.New("Invalid client nonce in the final client message.")
	}
	// Kafka signs the final message as it rebuilds it: without extensions,
	// the channel binding encoded again.
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + ",c=" + base64.StdEncoding.EncodeToString(channel) + ",r=" + s.nonce)
	signature := s.mech.hmac(s.cred.StoredKey, authMessage)
	if len(proof) != len(signature) {
		return nil, &saslAbort{fmt.Errorf("SCRAM client proof of %d bytes, want %d", len(proof), len(signature))}
	}
	for i := range signature {
		signature[i] ^= proof[i]
	}
	h := s.mech.hash()
	h.Write(signature)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 || !s.known {
		return nil, errors.New("Invalid client credentials")
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMessage))), nil
}

// scramExtensions parses the extensions of a client's first message
// (",k=v" repeated, already matched) as Kafka's Utils.parseMap does, a
// later value of a key replacing an earlier one; order is the keys as
// first given.
func scramExtensions(s string) (map[string]string, []string) {
	ext := map[string]string{}
	var order []string
	for _, kv := range strings.Split(strings.TrimPrefix(s, ","), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := ext[k]; !seen {
			order = append(order, k)
		}
		ext[k] = v
	}
	return ext, order
}

// scramUsername decodes a saslname as Kafka's ScramFormatter.username:
// "=2C" is ',', "=3D" is '=', and no other '=' may remain.
func scramUsername(saslName string) (string, error) {
	user := strings.ReplaceAll(saslName, "=2C", ",")
	if strings.Contains(strings.ReplaceAll(user, "=3D", ""), "=") {
		return "", fmt.Errorf("Invalid username: %s", saslName)
	}
	return strings.ReplaceAll(user, "=3D", "="), nil
}

// scramNonce is a server nonce as Kafka's ScramFormatter.secureRandomString
// makes it: 130 random bits in base 36.
func scramNonce() (string, error) {
	var b [17]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("SCRAM server nonce: %w", err)
	}
	b[0] &= 0x03 // 130 bits
	return new(big.Int).SetBytes(b[:]).Text(36), nil
}

// scramFakeKey keys the fake credentials of unknown users: the same user
// gets the same salt for as long as this process runs.
var scramFakeKey = sync.OnceValue(func() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read does not fail on supported platforms
	return key
})

// fakeScramCredential is the credential an unknown user is answered with:
// a salt shaped like the ones Kafka's tools make (130 bits in base 36),
// Kafka's default iterations, keys no password derives.
func fakeScramCredential(m scramMechanism, user string) metadata.ScramCredential {
	derive := func(purpose string) []byte {
		return m.hmac(scramFakeKey(), []byte(purpose+"\x00"+m.name+"\x00"+user))
	}
	salt := derive("salt")[:17]
	salt[0] &= 0x03
	return metadata.ScramCredential{Salt: []byte(new(big.Int).SetBytes(salt).Text(36)), StoredKey: derive("stored"),
		ServerKey: derive("server"), Iterations: scramMinIterations}
}

// quoteClientMessage is a client's message for a log line, cut short.
func quoteClientMessage(msg []byte) string {
	const most = 256
	if len(msg) > most {
		return strconv.Quote(string(msg[:most])) + "..."
	}
	return strconv.Quote(string(msg))
}
