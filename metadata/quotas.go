package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Kafka's client quota entity types (ClientQuotaEntity.USER, CLIENT_ID,
// IP).
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// QuotaEntityData is one part of a client quota entity: its type and name,
// a nil name being the type's default entity (Kafka's
// ClientQuotaRecord.EntityData).
type QuotaEntityData struct {
	EntityType string
	EntityName *string
}

// ClientQuotaRecord sets, or with Remove removes, one quota of an entity
// (Kafka's ClientQuotaRecord).
type ClientQuotaRecord struct {
	Entity []QuotaEntityData
	Key    string
	Value  float64
	Remove bool
}

func (ClientQuotaRecord) record()       {}
func (ClientQuotaRecord) accessRecord() {}

// QuotaName is an entity's name for one type: Set when the entity has that
// type, Default when it is the type's default entity (a null name).
type QuotaName struct {
	Set, Default bool
	Name         string
}

// Named is the entity part name of a type.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultName is the default entity of a type.
func DefaultName() QuotaName { return QuotaName{Set: true, Default: true} }

// QuotaEntity is a client quota entity (Kafka's ClientQuotaEntity): a
// user, a client id, both, or an IP, each named or the default.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaEntityOf is the entity of a record's parts; duplicate or unknown
// types are refused.
func QuotaEntityOf(parts []QuotaEntityData) (QuotaEntity, error) {
	var e QuotaEntity
	for _, p := range parts {
		var n *QuotaName
		switch p.EntityType {
		case QuotaUser:
			n = &e.User
		case QuotaClientID:
			n = &e.ClientID
		case QuotaIP:
			n = &e.IP
		default:
			return QuotaEntity{}, fmt.Errorf("%w: client quota entity type %q", ErrInvalidRecord, p.EntityType)
		}
		if n.Set {
			return QuotaEntity{}, fmt.Errorf("%w: client quota entity type %q twice", ErrInvalidRecord, p.EntityType)
		}
		if p.EntityName == nil {
			*n = DefaultName()
		} else {
			*n = Named(*p.EntityName)
		}
	}
	if len(parts) == 0 {
		return QuotaEntity{}, fmt.Errorf("%w: empty client quota entity", ErrInvalidRecord)
	}
	return e, nil
}

// Parts is e as a record's parts, by type name.
func (e QuotaEntity) Parts() []QuotaEntityData {
	var out []QuotaEntityData
	for _, p := range []struct {
		typ  string
		name QuotaName
	}{{QuotaClientID, e.ClientID}, {QuotaIP, e.IP}, {QuotaUser, e.User}} {
		if !p.name.Set {
			continue
		}
		d := QuotaEntityData{EntityType: p.typ}
		if !p.name.Default {
			d.EntityName = new(p.name.Name)
		}
		out = append(out, d)
	}
	return out
}

// ClientQuotasImage is the client quotas, by entity (Kafka's
// ClientQuotasImage).
type ClientQuotasImage struct {
	entities map[QuotaEntity]map[string]float64
}

// Of is e's quotas by key; nil when it has none. The map is the image's:
// read it, do not change it.
func (q ClientQuotasImage) Of(e QuotaEntity) map[string]float64 {
	return q.entities[e]
}

// Entities lists the entities with a quota, in a stable order.
func (q ClientQuotasImage) Entities() []QuotaEntity {
	return slices.SortedFunc(maps.Keys(q.entities), compareEntities)
}

func compareEntities(a, b QuotaEntity) int {
	for _, p := range [][2]QuotaName{{a.User, b.User}, {a.ClientID, b.ClientID}, {a.IP, b.IP}} {
		if c := compareNames(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}

func compareNames(a, b QuotaName) int {
	rank := func(n QuotaName) int {
		switch {
		case !n.Set:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func (q ClientQuotasImage) records() []Record {
	var out []Record
	for _, e := range q.Entities() {
		quotas := q.entities[e]
		for _, k := range slices.Sorted(maps.Keys(quotas)) {
			out = append(out, ClientQuotaRecord{Entity: e.Parts(), Key: k, Value: quotas[k]})
		}
	}
	return out
}

// clientQuotasDelta is the changed quotas of each entity; a nil value is
// a removed one.
type clientQuotasDelta struct {
	changed map[QuotaEntity]map[string]*float64
}

// replay applies r; as Kafka's ClientQuotaControlManager.replay, removing
// a quota that is not set changes nothing.
func (d *clientQuotasDelta) replay(r ClientQuotaRecord) error {
	e, err := QuotaEntityOf(r.Entity)
	if err != nil {
		return err
	}
	if d.changed == nil {
		d.changed = map[QuotaEntity]map[string]*float64{}
	}
	if d.changed[e] == nil {
		d.changed[e] = map[string]*float64{}
	}
	if r.Remove {
		d.changed[e][r.Key] = nil
	} else {
		d.changed[e][r.Key] = new(r.Value)
	}
	return nil
}

func (d *clientQuotasDelta) apply(base ClientQuotasImage) ClientQuotasImage {
	if d.changed == nil {
		return base
	}
	entities := maps.Clone(base.entities)
	if entities == nil {
		entities = map[QuotaEntity]map[string]float64{}
	}
	for e, changes := range d.changed {
		quotas := maps.Clone(entities[e])
		if quotas == nil {
			quotas = map[string]float64{}
		}
		for k, v := range changes {
			if v == nil {
				delete(quotas, k)
			} else {
				quotas[k] = *v
			}
		}
		if len(quotas) == 0 {
			delete(entities, e)
		} else {
			entities[e] = quotas
		}
	}
	return ClientQuotasImage{entities: entities}
}
