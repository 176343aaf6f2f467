package metadata

// The image's access state: who may connect (SCRAM credentials, scram.go,
// and delegation tokens, tokens.go), what each may do (ACLs, acls.go) and how fast (client quotas,
// quotas.go). Storage keeps none of it in its own files, so a single node
// keeps these records as they are, in one batch (AccessRecords); a
// cluster keeps them in its log like any other record.

import "slices"

// AccessRecord is a record of the access state.
type AccessRecord interface {
	Record
	accessRecord()
}

// AccessImage is the access state (Kafka's ScramImage, AclsImage and
// ClientQuotasImage).
type AccessImage struct {
	Scram        ScramImage
	Tokens       DelegationTokensImage
	ACLs         ACLsImage
	ClientQuotas ClientQuotasImage
}

// accessDelta is the changes to an AccessImage.
type accessDelta struct {
	scram        scramDelta
	tokens       tokensDelta
	acls         aclsDelta
	clientQuotas clientQuotasDelta
}

// replay applies one access record on base; as Delta.Replay, a record
// that does not fit is refused and changes nothing.
func (d *accessDelta) replay(base *AccessImage, r AccessRecord) error {
	switch r := r.(type) {
	case UserScramCredentialRecord:
		d.scram.put(r)
	case RemoveUserScramCredentialRecord:
		return d.scram.remove(base.Scram, r)
	case DelegationTokenRecord:
		return d.tokens.put(r)
	case RemoveDelegationTokenRecord:
		return d.tokens.remove(base.Tokens, r)
	case AccessControlEntryRecord:
		return d.acls.put(base.ACLs, r)
	case RemoveAccessControlEntryRecord:
		return d.acls.remove(base.ACLs, r)
	case ClientQuotaRecord:
		return d.clientQuotas.replay(r)
	}
	return nil
}

// apply returns base with the changes.
func (d *accessDelta) apply(base AccessImage) AccessImage {
	base.Scram = d.scram.apply(base.Scram)
	base.Tokens = d.tokens.apply(base.Tokens)
	base.ACLs = d.acls.apply(base.ACLs)
	base.ClientQuotas = d.clientQuotas.apply(base.ClientQuotas)
	return base
}

// AccessRecords lists the records that rebuild img's access state from
// none.
func AccessRecords(img *Image) []Record {
	return slices.Concat(img.Access.Scram.records(), img.Access.Tokens.records(), img.Access.ACLs.records(), img.Access.ClientQuotas.records())
}
