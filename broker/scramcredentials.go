package broker

// AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554).
//
// AlterUserScramCredentials decides on the latest image and proposes
// UserScramCredentialRecord and RemoveUserScramCredentialRecord as one
// change, as Kafka's ScramControlManager.alterCredentials does, with its
// errors and messages: a user named twice in one request (deletions and
// upsertions together) is DUPLICATE_RESOURCE, an empty user name or
// iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL, a mechanism
// other than SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2)
// UNSUPPORTED_SASL_MECHANISM, deleting a credential there is none of
// RESOURCE_NOT_FOUND, an empty salted password UNKNOWN_SERVER_ERROR (its
// HMAC key, which Java refuses); the other users' changes are made. The
// client salts and hashes the password (the salted password is what
// travels); the server keeps its StoredKey and ServerKey. It needs ALTER
// on the cluster, else each user is CLUSTER_AUTHORIZATION_FAILED; in a
// cluster it is forwarded to the active controller (forward.go).
//
// DescribeUserScramCredentials answers from this node's image, as Kafka's
// brokers answer from their metadata cache: every user with a credential
// when none is named, else each named user once, RESOURCE_NOT_FOUND for
// one without a credential, DUPLICATE_RESOURCE for one named twice; each
// credential as its mechanism and iterations, never its keys. It needs
// DESCRIBE on the cluster, else the answer's error and each named user's
// are CLUSTER_AUTHORIZATION_FAILED (without the user's name, as Kafka's
// getErrorResponse leaves it out); where Kafka fails on a refused request
// naming no user (a NullPointerException, no answer), Strata answers the
// top-level error alone.

import (
	"bytes"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// registerScramCredentials serves AlterUserScramCredentials and
// DescribeUserScramCredentials; their versions are here and nowhere else.
func registerScramCredentials(r *registry) {
	r.add(kmsg.DescribeUserSCRAMCredentials, 0, 0, handleDescribeUserScramCredentials)
	r.add(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserScramCredentials)
}

// scramAlterFailure is one user's refused alteration.
type scramAlterFailure struct {
	code *kerr.Error
	msg  string
}

func handleAlterUserScramCredentials(rc *reqCtx) (kmsg.Response, error) {
	b := rc.svc
	r := rc.req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	if !rc.authorizeCluster(OpAlter) {
		return alterScramFailed(r, kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Description)), nil
	}
	var resp *kmsg.AlterUserSCRAMCredentialsResponse
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		resp, records = alterScramCredentials(img, r)
		return records, nil
	})
	if err != nil {
		return alterScramFailed(r, b.errorCode(kmsg.AlterUserSCRAMCredentials, err), errorMessage(err)), nil
	}
	return resp, nil
}

// alterScramCredentials decides r on img: the answer and the records to
// propose.
func alterScramCredentials(img *metadata.Image, r *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, []metadata.Record) {
	failed := map[string]scramAlterFailure{}
	var failedOrder []string
	fail := func(user string, code *kerr.Error, msg string) {
		failed[user] = scramAlterFailure{code, msg}
		failedOrder = append(failedOrder, user)
	}
	duplicate := func(user string) {
		fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	}
	var deletions []kmsg.AlterUserSCRAMCredentialsRequestDeletion
	var upsertions []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
	deleted := func(user string) int {
		return slices.IndexFunc(deletions, func(d kmsg.AlterUserSCRAMCredentialsRequestDeletion) bool { return d.Name == user })
	}
	upserted := func(user string) int {
		return slices.IndexFunc(upsertions, func(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) bool { return u.Name == user })
	}
	for _, d := range r.Deletions {
		if _, ok := failed[d.Name]; ok {
			continue
		}
		if i := deleted(d.Name); i >= 0 {
			deletions = slices.Delete(deletions, i, i+1)
			duplicate(d.Name)
			continue
		}
		m, f := checkScramUser(d.Name, d.Mechanism)
		if f == nil {
			if _, ok := img.Access.Scram.Credential(metadata.ScramUser{Name: d.Name, Mechanism: m.id}); !ok {
				f = &scramAlterFailure{kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"}
			}
		}
		if f != nil {
			fail(d.Name, f.code, f.msg)
			continue
		}
		deletions = append(deletions, d)
	}
	for _, u := range r.Upsertions {
		if _, ok := failed[u.Name]; ok {
			continue
		}
		if i, j := deleted(u.Name), upserted(u.Name); i >= 0 || j >= 0 {
			if i >= 0 {
				deletions = slices.Delete(deletions, i, i+1)
			} else {
				upsertions = slices.Delete(upsertions, j, j+1)
			}
			duplicate(u.Name)
			continue
		}
		_, f := checkScramUser(u.Name, u.Mechanism)
		switch {
		case f != nil:
		case u.Iterations < scramMinIterations:
			f = &scramAlterFailure{kerr.UnacceptableCredential, "Too few iterations"}
		case u.Iterations > scramMaxIterations:
			f = &scramAlterFailure{kerr.UnacceptableCredential, "Too many iterations"}
		case len(u.SaltedPassword) == 0:
			f = &scramAlterFailure{kerr.UnknownServerError, kerr.UnknownServerError.Description}
		}
		if f != nil {
			fail(u.Name, f.code, f.msg)
			continue
		}
		upsertions = append(upsertions, u)
	}
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	ok := func(user string) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		resp.Results = append(resp.Results, res)
	}
	var records []metadata.Record
	for _, d := range deletions {
		records = append(records, metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: metadata.ScramMechanism(d.Mechanism)})
		ok(d.Name)
	}
	for _, u := range upsertions {
		m, _ := scramMechanismOf(metadata.ScramMechanism(u.Mechanism))
		stored, server := m.credential(u.SaltedPassword)
		records = append(records, metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: m.id, Salt: bytes.Clone(u.Salt),
			StoredKey: stored, ServerKey: server, Iterations: u.Iterations})
		ok(u.Name)
	}
	for _, user := range failedOrder {
		f := failed[user]
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, f.code.Code, kmsg.StringPtr(f.msg)
		resp.Results = append(resp.Results, res)
	}
	return resp, records
}

// checkScramUser is Kafka's validateScramUsernameAndMechanism.
func checkScramUser(name string, mechanism int8) (scramMechanism, *scramAlterFailure) {
	if name == "" {
		return scramMechanism{}, &scramAlterFailure{kerr.UnacceptableCredential, "Username must not be empty"}
	}
	m, ok := scramMechanismOf(metadata.ScramMechanism(mechanism))
	if !ok {
		return scramMechanism{}, &scramAlterFailure{kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"}
	}
	return m, nil
}

// alterScramFailed answers every user of r code, as Kafka's
// AlterUserScramCredentialsRequest.getErrorResponse: each once, by name.
func alterScramFailed(r *kmsg.AlterUserSCRAMCredentialsRequest, code int16, msg *string) *kmsg.AlterUserSCRAMCredentialsResponse {
	var users []string
	for _, d := range r.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range r.Upsertions {
		users = append(users, u.Name)
	}
	slices.Sort(users)
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	for _, user := range slices.Compact(users) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func handleDescribeUserScramCredentials(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	if !rc.authorizeCluster(OpDescribe) {
		code, msg := kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Description)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for range r.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	scram := rc.svc.meta.Image().Access.Scram
	var users []string
	named := map[string]int{}
	if len(r.Users) == 0 {
		for _, u := range scram.Users() {
			if named[u.Name] == 0 {
				users = append(users, u.Name)
			}
			named[u.Name] = 1
		}
	}
	for _, u := range r.Users {
		if named[u.Name] == 0 {
			users = append(users, u.Name)
		}
		named[u.Name]++
	}
	for _, user := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		for _, m := range scramMechanisms {
			if c, ok := scram.Credential(metadata.ScramUser{Name: user, Mechanism: m.id}); ok {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = int8(m.id), c.Iterations
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		switch {
		case named[user] > 1:
			res.CredentialInfos = nil
			res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: "+user)
		case len(res.CredentialInfos) == 0:
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("Attempt to describe a user credential that does not exist: "+user)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
