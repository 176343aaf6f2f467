package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// DelegationTokenRecord creates a delegation token, or replaces it when it
// is renewed or its expiry moved (Kafka's DelegationTokenRecord). Owner,
// Requester and Renewers are principals as type:name; the timestamps are
// milliseconds of the Unix epoch. The token's HMAC is not here: each node
// derives it from the token id and delegation.token.secret.key, as Kafka's
// do.
type DelegationTokenRecord struct {
	Owner               string
	Requester           string
	Renewers            []string
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
	TokenID             string
}

// RemoveDelegationTokenRecord removes a delegation token, expired or
// expired on request (Kafka's RemoveDelegationTokenRecord).
type RemoveDelegationTokenRecord struct {
	TokenID string
}

func (DelegationTokenRecord) record()             {}
func (RemoveDelegationTokenRecord) record()       {}
func (DelegationTokenRecord) accessRecord()       {}
func (RemoveDelegationTokenRecord) accessRecord() {}

// DelegationToken is one token's information (Kafka's TokenInformation).
type DelegationToken struct {
	ID                  string
	Owner               string
	Requester           string
	Renewers            []string
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
}

// OwnerOrRenewer says whether principal owns the token, requested it or may
// renew it (TokenInformation.ownerOrRenewer).
func (t DelegationToken) OwnerOrRenewer(principal string) bool {
	return t.Owner == principal || t.Requester == principal || slices.Contains(t.Renewers, principal)
}

// DelegationTokensImage is the delegation tokens (Kafka's
// DelegationTokenImage).
type DelegationTokensImage struct {
	tokens map[string]DelegationToken
}

// Token is the token of id, ok false if there is none.
func (s DelegationTokensImage) Token(id string) (DelegationToken, bool) {
	t, ok := s.tokens[id]
	return t, ok
}

// All lists the tokens by id.
func (s DelegationTokensImage) All() []DelegationToken {
	out := make([]DelegationToken, 0, len(s.tokens))
	for _, id := range slices.Sorted(maps.Keys(s.tokens)) {
		out = append(out, s.tokens[id])
	}
	return out
}

func (s DelegationTokensImage) records() []Record {
	var out []Record
	for _, t := range s.All() {
		out = append(out, DelegationTokenRecord{Owner: t.Owner, Requester: t.Requester, Renewers: t.Renewers,
			IssueTimestamp: t.IssueTimestamp, MaxTimestamp: t.MaxTimestamp, ExpirationTimestamp: t.ExpirationTimestamp, TokenID: t.ID})
	}
	return out
}

// tokensDelta is the changed tokens; a nil value is a removed one.
type tokensDelta struct {
	changed map[string]*DelegationToken
}

func (d *tokensDelta) put(r DelegationTokenRecord) error {
	if r.TokenID == "" {
		return fmt.Errorf("%w: delegation token without an id", ErrInvalidRecord)
	}
	if d.changed == nil {
		d.changed = map[string]*DelegationToken{}
	}
	d.changed[r.TokenID] = &DelegationToken{ID: r.TokenID, Owner: r.Owner, Requester: r.Requester, Renewers: r.Renewers,
		IssueTimestamp: r.IssueTimestamp, MaxTimestamp: r.MaxTimestamp, ExpirationTimestamp: r.ExpirationTimestamp}
	return nil
}

func (d *tokensDelta) remove(base DelegationTokensImage, r RemoveDelegationTokenRecord) error {
	t, changed := d.changed[r.TokenID]
	if _, had := base.tokens[r.TokenID]; (changed && t == nil) || (!changed && !had) {
		return fmt.Errorf("%w: remove unknown delegation token %q", ErrInvalidRecord, r.TokenID)
	}
	if d.changed == nil {
		d.changed = map[string]*DelegationToken{}
	}
	d.changed[r.TokenID] = nil
	return nil
}

func (d *tokensDelta) apply(base DelegationTokensImage) DelegationTokensImage {
	if d.changed == nil {
		return base
	}
	tokens := maps.Clone(base.tokens)
	if tokens == nil {
		tokens = map[string]DelegationToken{}
	}
	for id, t := range d.changed {
		if t == nil {
			delete(tokens, id)
		} else {
			tokens[id] = *t
		}
	}
	return DelegationTokensImage{tokens: tokens}
}
