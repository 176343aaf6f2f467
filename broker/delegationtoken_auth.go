package broker

// Delegation tokens' secrets and their SCRAM logins (KIP-48).
//
// A token's HMAC is HMAC-SHA512 of its id under delegation.token.secret.key,
// as Kafka's DelegationTokenManager.createHmac computes it; the metadata
// records carry no HMAC, so every node derives the same one from the same
// key, and a node with another key answers as if the token did not exist.
// A client logs in with SCRAM (tokenauth=true) as the token's id with the
// HMAC's base64 as its password; each node derives the SCRAM credential
// from it once per token and mechanism (ScramFormatter.generateCredential:
// a random salt, the mechanism's minimum 4096 iterations), as Kafka's
// DelegationTokenCache does on each broker.
//
// Where Strata differs: a token past its expiry no longer logs in. Kafka's
// brokers keep authenticating it until the controller's next sweep
// (delegation.token.expiry.check.interval.ms) removes it, with a session
// lifetime of 0, which means none.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/strata-io/strata/metadata"
)

// DelegationTokenConfig is the delegation.token.* keys.
type DelegationTokenConfig struct {
	// SecretKey is delegation.token.secret.key; empty disables tokens, as
	// in Kafka (DELEGATION_TOKEN_AUTH_DISABLED).
	SecretKey     string
	MaxLifetime   time.Duration // delegation.token.max.lifetime.ms
	ExpiryTime    time.Duration // delegation.token.expiry.time.ms: a new or renewed token's expiry
	CheckInterval time.Duration // delegation.token.expiry.check.interval.ms: how often expired tokens are removed
}

// delegationTokens derives the tokens' HMACs and SCRAM credentials on one
// node.
type delegationTokens struct {
	cfg   DelegationTokenConfig
	image func() *metadata.Image
	now   func() time.Time

	mu    sync.Mutex
	creds map[tokenMechanism]metadata.ScramCredential
}

type tokenMechanism struct {
	id   string
	mech metadata.ScramMechanism
}

func newDelegationTokens(cfg DelegationTokenConfig, image func() *metadata.Image, now func() time.Time) *delegationTokens {
	return &delegationTokens{cfg: cfg, image: image, now: now, creds: map[tokenMechanism]metadata.ScramCredential{}}
}

// enabled says whether tokens may be created (Kafka's tokenAuthEnabled).
func (d *delegationTokens) enabled() bool { return d != nil && d.cfg.SecretKey != "" }

// hmac is a token's HMAC.
func (d *delegationTokens) hmac(tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(d.cfg.SecretKey))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// byHMAC is the token whose HMAC mac is, as Kafka's tokenForHmac finds it.
func (d *delegationTokens) byHMAC(img *metadata.Image, mac []byte) (metadata.DelegationToken, bool) {
	for _, t := range img.Access.Tokens.All() {
		if hmac.Equal(d.hmac(t.ID), mac) {
			return t, true
		}
	}
	return metadata.DelegationToken{}, false
}

// login is a token's SCRAM login for mechanism m, ok false for a token
// that does not exist (or has expired) or when tokens are disabled.
func (d *delegationTokens) login(tokenID string, m scramMechanism) (tokenLogin, bool) {
	if !d.enabled() {
		return tokenLogin{}, false
	}
	t, ok := d.image().Access.Tokens.Token(tokenID)
	if !ok {
		return tokenLogin{}, false
	}
	expiry := time.UnixMilli(min(t.ExpirationTimestamp, t.MaxTimestamp))
	if d.now().After(expiry) {
		return tokenLogin{}, false
	}
	cred, err := d.credential(tokenID, m)
	if err != nil {
		return tokenLogin{}, false
	}
	return tokenLogin{cred: cred, owner: t.Owner, expiry: expiry}, true
}

// credential is the SCRAM credential of a token's HMAC for m, derived once.
func (d *delegationTokens) credential(tokenID string, m scramMechanism) (metadata.ScramCredential, error) {
	key := tokenMechanism{tokenID, m.id}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.creds[key]; ok {
		return c, nil
	}
	salt, err := scramNonce()
	if err != nil {
		return metadata.ScramCredential{}, err
	}
	password := base64.StdEncoding.EncodeToString(d.hmac(tokenID))
	salted, err := pbkdf2.Key(m.hash, password, []byte(salt), scramMinIterations, m.hash().Size())
	if err != nil {
		return metadata.ScramCredential{}, fmt.Errorf("SCRAM credential of a delegation token: %w", err)
	}
	stored, server := m.credential(salted)
	c := metadata.ScramCredential{Salt: []byte(salt), StoredKey: stored, ServerKey: server, Iterations: scramMinIterations}
	if len(d.creds) > 4096 {
		// Tokens come and go; a map of every one ever seen would only grow.
		clear(d.creds)
	}
	d.creds[key] = c
	return c, nil
}

// newTokenID draws a token id as Kafka's Uuid.randomUuid().toString().
func newTokenID() (string, error) {
	u, err := metadata.RandomUUID(func([16]byte) bool { return false })
	if err != nil {
		return "", fmt.Errorf("token id: %w", err)
	}
	return metadata.TopicIDString(u), nil
}
