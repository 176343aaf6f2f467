package broker

// CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
// DescribeDelegationToken (KIP-48, KIP-373), as Kafka 4's KafkaApis,
// ControllerApis and DelegationTokenControlManager serve them.
//
// Create, renew and expire are decided on the latest image and proposed as
// DelegationTokenRecord or RemoveDelegationTokenRecord; in a cluster they
// are forwarded to the active controller (forward.go), which decides them
// as Kafka's controller does. Before that, as both Kafka's broker and
// controller check, a request is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED from
// a principal that logged in with a token, on a PLAINTEXT listener, and on
// an SSL listener without a client certificate (a forwarded request's own
// hop is not checked, as ControllerApis allows). Then:
//
//   - create: the owner is the requester unless the request names one, which
//     needs CREATE_TOKENS on that USER (else
//     DELEGATION_TOKEN_AUTHORIZATION_FAILED); a renewer of a type other than
//     User is INVALID_PRINCIPAL_TYPE; no delegation.token.secret.key is
//     DELEGATION_TOKEN_AUTH_DISABLED, a finalized metadata.version below 14
//     (3.6-IV2) UNSUPPORTED_VERSION. The token's max timestamp is now plus
//     the smaller of the request's max lifetime (if positive) and
//     delegation.token.max.lifetime.ms, its expiry now plus
//     delegation.token.expiry.time.ms, no later than the max;
//   - renew: the token is found by its HMAC (DELEGATION_TOKEN_NOT_FOUND),
//     must not have expired (DELEGATION_TOKEN_EXPIRED) and the requester
//     must own, have requested or renew it (DELEGATION_TOKEN_OWNER_MISMATCH);
//     its expiry becomes now plus the smaller of the renew period (if
//     positive) and delegation.token.expiry.time.ms, no later than its max;
//   - expire: as renew, but a negative period removes the token at once
//     (the answer's expiry is now), and a positive one moves its expiry to
//     now plus it, no later than its max;
//   - describe answers from this node's image: none when the owners list is
//     empty, every token when it is null, else those an owner owns,
//     requested or renews; of those, the ones the requester owns, requested
//     or renews, or may DESCRIBE as a DELEGATION_TOKEN, or whose owner it may
//     DESCRIBE_TOKENS as a USER. Each token comes with its HMAC.
//
// The active controller (or a single node) removes expired tokens every
// delegation.token.expiry.check.interval.ms (sweepDelegationTokens).

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// registerDelegationTokens serves the delegation token keys; their versions
// are here and nowhere else (Kafka 4 serves none at v0).
func registerDelegationTokens(r *registry) {
	r.add(kmsg.CreateDelegationToken, 1, 3, handleCreateDelegationToken)
	r.add(kmsg.RenewDelegationToken, 1, 2, handleRenewDelegationToken)
	r.add(kmsg.ExpireDelegationToken, 1, 2, handleExpireDelegationToken)
	r.add(kmsg.DescribeDelegationToken, 1, 3, handleDescribeDelegationToken)
}

// errorTimestamp is Kafka's DelegationTokenManager.ErrorTimestamp.
const errorTimestamp = -1

// tokenRequestsAllowed is Kafka's allowTokenRequests.
func (rc *reqCtx) tokenRequestsAllowed() bool {
	switch {
	case rc.tokenAuthenticated:
		return false
	case rc.forwarded:
		return true
	case rc.conn == nil:
		return false
	case rc.conn.sasl != nil:
		return true
	case rc.conn.tls != nil:
		return rc.principal != anonymousPrincipal
	}
	return false
}

func splitPrincipal(p string) (typ, name string) {
	typ, name, _ = strings.Cut(p, ":")
	return typ, name
}

func handleCreateDelegationToken(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.CreateDelegationTokenRequest)
	requester := rc.principal
	owner := requester
	if r.OwnerPrincipalName != nil && *r.OwnerPrincipalName != "" {
		typ := ""
		if r.OwnerPrincipalType != nil {
			typ = *r.OwnerPrincipalType
		}
		owner = typ + ":" + *r.OwnerPrincipalName
	}
	resp := kmsg.NewPtrCreateDelegationTokenResponse()
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
	refuse := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode = code
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = errorTimestamp, errorTimestamp, errorTimestamp
		resp.HMAC = []byte{}
		return resp, nil
	}
	switch {
	case !rc.tokenRequestsAllowed():
		return refuse(kerr.DelegationTokenRequestNotAllowed.Code)
	case owner != requester && !rc.authorize(metadata.ACLOpCreateTokens, metadata.ACLResourceUser, owner):
		return refuse(kerr.DelegationTokenAuthorizationFailed.Code)
	}
	for _, rn := range r.Renewers {
		if rn.PrincipalType != "User" {
			return refuse(kerr.InvalidPrincipalType.Code)
		}
	}
	if !rc.svc.tokens.enabled() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	}
	if !tokensInMetadata(rc) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	cfg := rc.svc.tokens.cfg
	now := rc.svc.clock.Now().UnixMilli()
	maxLifetime := cfg.MaxLifetime.Milliseconds()
	if r.MaxLifetimeMillis > 0 {
		maxLifetime = min(maxLifetime, r.MaxLifetimeMillis)
	}
	maxTimestamp := saturatingAdd(now, maxLifetime)
	expiry := min(maxTimestamp, saturatingAdd(now, cfg.ExpiryTime.Milliseconds()))
	id, err := newTokenID()
	if err != nil {
		return nil, err
	}
	rec := metadata.DelegationTokenRecord{Owner: owner, Requester: requester, IssueTimestamp: now, MaxTimestamp: maxTimestamp,
		ExpirationTimestamp: expiry, TokenID: id}
	for _, rn := range r.Renewers {
		rec.Renewers = append(rec.Renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	if _, err := rc.svc.meta.Update(func(*metadata.Image) ([]metadata.Record, error) { return []metadata.Record{rec}, nil }); err != nil {
		resp.ErrorCode = rc.svc.errorCode(kmsg.CreateDelegationToken, err)
		return resp, nil
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = now, expiry, maxTimestamp
	resp.TokenID, resp.HMAC = id, rc.svc.tokens.hmac(id)
	return resp, nil
}

// delegationTokensMetadataVersion is Kafka's IBP_3_6_IV2, the
// metadata.version from which the metadata holds delegation tokens.
const delegationTokensMetadataVersion = 14

// tokensInMetadata says whether the finalized metadata.version holds tokens;
// below it Kafka's controller answers UNSUPPORTED_VERSION.
func tokensInMetadata(rc *reqCtx) bool {
	return rc.svc.meta.Image().Features.Level(metadata.MetadataVersionFeature) >= delegationTokensMetadataVersion
}

// saturatingAdd is Kafka's sum(now, duration): no overflow past the largest
// long.
func saturatingAdd(now, d int64) int64 {
	if now > (1<<63-1)-d {
		return 1<<63 - 1
	}
	return now + d
}

// changeToken decides a renewal or expiry of the token whose HMAC mac is:
// change returns the error code and the expiry answered, and the record to
// propose, nil for none.
func changeToken(rc *reqCtx, mac []byte, change func(t metadata.DelegationToken, now int64) (int16, int64, metadata.Record)) (int16, int64) {
	if !rc.tokenRequestsAllowed() {
		return kerr.DelegationTokenRequestNotAllowed.Code, errorTimestamp
	}
	tokens := rc.svc.tokens
	if !tokens.enabled() {
		return kerr.DelegationTokenAuthDisabled.Code, 0
	}
	if !tokensInMetadata(rc) {
		return kerr.UnsupportedVersion.Code, 0
	}
	var code int16
	var expiry int64
	_, err := rc.svc.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		t, ok := tokens.byHMAC(img, mac)
		if !ok {
			code, expiry = kerr.DelegationTokenNotFound.Code, 0
			return nil, nil
		}
		var rec metadata.Record
		code, expiry, rec = change(t, rc.svc.clock.Now().UnixMilli())
		if rec == nil {
			return nil, nil
		}
		return []metadata.Record{rec}, nil
	})
	if err != nil {
		return rc.svc.errorCode(kmsg.Key(rc.req.Key), err), 0
	}
	return code, expiry
}

func tokenRecord(t metadata.DelegationToken, expiry int64) metadata.DelegationTokenRecord {
	return metadata.DelegationTokenRecord{Owner: t.Owner, Requester: t.Requester, Renewers: t.Renewers, IssueTimestamp: t.IssueTimestamp,
		MaxTimestamp: t.MaxTimestamp, ExpirationTimestamp: expiry, TokenID: t.ID}
}

func tokenExpired(t metadata.DelegationToken, now int64) bool {
	return t.MaxTimestamp < now || t.ExpirationTimestamp < now
}

func handleRenewDelegationToken(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.RenewDelegationTokenRequest)
	resp := kmsg.NewPtrRenewDelegationTokenResponse()
	resp.ErrorCode, resp.ExpiryTimestamp = changeToken(rc, r.HMAC, func(t metadata.DelegationToken, now int64) (int16, int64, metadata.Record) {
		switch {
		case tokenExpired(t, now):
			return kerr.DelegationTokenExpired.Code, 0, nil
		case !t.OwnerOrRenewer(rc.principal):
			return kerr.DelegationTokenOwnerMismatch.Code, 0, nil
		}
		period := rc.svc.tokens.cfg.ExpiryTime.Milliseconds()
		if r.RenewTimeMillis > 0 {
			period = min(period, r.RenewTimeMillis)
		}
		expiry := min(t.MaxTimestamp, now+period)
		return 0, expiry, tokenRecord(t, expiry)
	})
	return resp, nil
}

func handleExpireDelegationToken(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ExpireDelegationTokenRequest)
	resp := kmsg.NewPtrExpireDelegationTokenResponse()
	resp.ErrorCode, resp.ExpiryTimestamp = changeToken(rc, r.HMAC, func(t metadata.DelegationToken, now int64) (int16, int64, metadata.Record) {
		switch {
		case !t.OwnerOrRenewer(rc.principal):
			return kerr.DelegationTokenOwnerMismatch.Code, 0, nil
		case r.ExpiryPeriodMillis < 0:
			return 0, now, metadata.RemoveDelegationTokenRecord{TokenID: t.ID}
		case tokenExpired(t, now):
			return kerr.DelegationTokenExpired.Code, 0, nil
		}
		expiry := min(t.MaxTimestamp, saturatingAdd(now, r.ExpiryPeriodMillis))
		return 0, expiry, tokenRecord(t, expiry)
	})
	return resp, nil
}

func handleDescribeDelegationToken(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeDelegationTokenRequest)
	resp := kmsg.NewPtrDescribeDelegationTokenResponse()
	switch {
	case !rc.tokenRequestsAllowed():
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !rc.svc.tokens.enabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case r.Owners != nil && len(r.Owners) == 0:
		return resp, nil
	}
	var owners []string
	for _, o := range r.Owners {
		owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
	}
	for _, t := range rc.svc.meta.Image().Access.Tokens.All() {
		if !describableToken(rc, t, owners) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueTimestamp, t.ExpirationTimestamp, t.MaxTimestamp
		d.TokenID, d.HMAC = t.ID, rc.svc.tokens.hmac(t.ID)
		for _, rn := range t.Renewers {
			dr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			dr.PrincipalType, dr.PrincipalName = splitPrincipal(rn)
			d.Renewers = append(d.Renewers, dr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}

// describableToken is Kafka's DelegationTokenManager.filterToken.
func describableToken(rc *reqCtx, t metadata.DelegationToken, owners []string) bool {
	if owners != nil {
		named := false
		for _, o := range owners {
			named = named || t.OwnerOrRenewer(o)
		}
		if !named {
			return false
		}
	}
	return t.OwnerOrRenewer(rc.principal) ||
		rc.authorize(OpDescribe, metadata.ACLResourceDelegationToken, t.ID) ||
		rc.authorize(metadata.ACLOpDescribeTokens, metadata.ACLResourceUser, t.Owner)
}

// sweepDelegationTokens removes the expired tokens every
// delegation.token.expiry.check.interval.ms while this node decides the
// metadata (a single node, or the active controller), as Kafka's
// controller sweeps them, until stop is closed.
func sweepDelegationTokens(meta metadata.Store, tokens *delegationTokens, decides func() bool, now func() time.Time, stop <-chan struct{}, logger *zap.Logger) {
	if !tokens.enabled() || tokens.cfg.CheckInterval <= 0 {
		return
	}
	t := time.NewTicker(tokens.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !decides() {
			continue
		}
		_, err := meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
			var out []metadata.Record
			ms := now().UnixMilli()
			for _, tok := range img.Access.Tokens.All() {
				if tokenExpired(tok, ms) {
					logger.Info("delegation token expired", zap.String("token", tok.ID), zap.String("owner", tok.Owner))
					out = append(out, metadata.RemoveDelegationTokenRecord{TokenID: tok.ID})
				}
			}
			return out, nil
		})
		if err != nil {
			logger.Warn("cannot remove expired delegation tokens", zap.Error(err))
		}
	}
}
