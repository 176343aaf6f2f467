package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// keyVersion is one key at one version.
type keyVersion struct{ key, version int16 }

// decodablePairs is every key and version kmsg can decode. What the broker
// serves is a subset (broker.TestServedVersionsDecodable), decided by its
// registry, so the decoder is tested on all of them.
func decodablePairs() []keyVersion {
	var out []keyVersion
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			out = append(out, keyVersion{key, v})
		}
	}
	return out
}

// decodable is the served set given to ParseRequest: all of decodablePairs.
func decodable(key, version int16) bool {
	req := kmsg.RequestForKey(key)
	return req != nil && version >= 0 && version <= req.MaxVersion()
}

// allHeaderRest is the client id "fuzz", the header tags when flexible and
// the body of req.
func allHeaderRest(req kmsg.Request) []byte {
	rest := binary.BigEndian.AppendUint16(nil, 4)
	rest = append(rest, "fuzz"...)
	if req.IsFlexible() {
		rest = append(rest, 0)
	}
	return req.AppendTo(rest)
}

func allFrame(key, version int16, correlationID int32, rest []byte) []byte {
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(correlationID))
	return append(frame, rest...)
}

// fillRequest populates every array of a kmsg request with one element
// (recursively, to depth 4), every string with a short value and byte
// fields with a real record batch, so a seed reaches the nested fields of
// its version; kmsg itself skips fields the version does not have.
func fillRequest(v reflect.Value, depth int) {
	if depth > 4 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			if v.Type().Elem().Kind() == reflect.String {
				s := "fz"
				v.Set(reflect.ValueOf(&s))
			}
			return
		}
		fillRequest(v.Elem(), depth)
	case reflect.Struct:
		if d := v.Addr().MethodByName("Default"); d.IsValid() && d.Type().NumIn() == 0 {
			d.Call(nil)
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() && v.Type().Field(i).Name != "Version" && v.Type().Field(i).Name != "UnknownTags" {
				fillRequest(f, depth+1)
			}
		}
	case reflect.String:
		v.SetString("fz")
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(allSeedBatch())
			return
		}
		e := reflect.New(v.Type().Elem()).Elem()
		fillRequest(e, depth+1)
		v.Set(reflect.Append(v, e))
	}
}

func allSeedBatch() []byte {
	rec := kmsg.NewRecord()
	rec.Key, rec.Value = []byte("k"), []byte("v")
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.NewRecordBatch()
	b.Magic, b.NumRecords = 2, 1
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = rec.AppendTo(nil)
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	return b.AppendTo(nil)
}

// allSeeds returns, for every decodable key and version, an empty request and
// a filled one, both encoded by kmsg.
func allSeeds(tb testing.TB) map[keyVersion][][]byte {
	seeds := map[keyVersion][][]byte{}
	for _, p := range decodablePairs() {
		empty := kmsg.RequestForKey(p.key)
		if empty == nil {
			tb.Fatalf("kmsg has no request for decodable key %d", p.key)
		}
		empty.SetVersion(p.version)
		full := kmsg.RequestForKey(p.key)
		fillRequest(reflect.ValueOf(full), 0)
		full.SetVersion(p.version)
		seeds[p] = [][]byte{allHeaderRest(empty), allHeaderRest(full)}
	}
	return seeds
}

// TestEverySeedParses pins the seeds: each decodable key and version parses
// its kmsg encoding and re-encodes it to the same bytes.
func TestEverySeedParses(t *testing.T) {
	n := 0
	for p, rests := range allSeeds(t) {
		for _, rest := range rests {
			checkParse(t, p, 1, rest, true)
			n++
		}
	}
	t.Logf("%d key/version pairs, %d seeds", len(decodablePairs()), n)
}

// checkParse runs the properties on one frame; mustParse demands success.
func checkParse(t *testing.T, p keyVersion, correlationID int32, rest []byte, mustParse bool) {
	t.Helper()
	name := kmsg.NameForKey(p.key)
	req, err := protocol.ParseRequest(allFrame(p.key, p.version, correlationID, rest), decodable)
	if err != nil {
		if mustParse {
			t.Fatalf("%s v%d: %v", name, p.version, err)
		}
		if !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("%s v%d (decodable) failed with %v, not ErrMalformed", name, p.version, err)
		}
		return
	}
	if req.Key != p.key || req.Version != p.version || req.CorrelationID != correlationID || req.Body == nil ||
		req.Body.Key() != p.key || req.Body.GetVersion() != p.version {
		t.Fatalf("%s v%d parsed as %+v", name, p.version, req)
	}
	enc := req.Body.AppendTo(nil)
	again, err := protocol.ParseRequest(allFrame(p.key, p.version, correlationID, allHeaderRest(req.Body)), decodable)
	if err != nil {
		t.Fatalf("%s v%d: re-encoded request does not parse: %v", name, p.version, err)
	}
	if enc2 := again.Body.AppendTo(nil); !bytes.Equal(enc, enc2) {
		t.Fatalf("%s v%d: decode-encode-decode unstable:\n%x\n%x", name, p.version, enc, enc2)
	}
}

// FuzzParseEveryVersion fuzzes the body of every decodable key and
// version: sel picks the pair, so the fuzzer never wastes inputs on
// undecodable ones. Properties: no panic, only ErrMalformed, and a parsed
// body re-encodes to bytes that parse to the same encoding.
func FuzzParseEveryVersion(f *testing.F) {
	pairs := decodablePairs()
	seeds := allSeeds(f)
	for i, p := range pairs {
		for _, rest := range seeds[p] {
			f.Add(uint16(i), int32(i), rest)
			f.Add(uint16(i), int32(i), rest[:len(rest)*3/4])
		}
	}
	f.Fuzz(func(t *testing.T, sel uint16, correlationID int32, rest []byte) {
		checkParse(t, pairs[int(sel)%len(pairs)], correlationID, rest, false)
	})
}

// TestHugeCountsAllocateLittle: an array count of 2^31-1 (and -5) right
// after the header of every decodable key and version is refused or parsed
// without allocating in proportion to the count.
func TestHugeCountsAllocateLittle(t *testing.T) {
	for _, p := range decodablePairs() {
		req := kmsg.RequestForKey(p.key)
		req.SetVersion(p.version)
		prefix := allHeaderRest(req)[:6] // client id
		if req.IsFlexible() {
			prefix = append(prefix, 0)
		}
		for _, count := range []int32{1<<31 - 1, -5} {
			// Lengths: a 4-byte count and a compact (uvarint) one, then a few bytes.
			for _, body := range [][]byte{
				binary.BigEndian.AppendUint32(nil, uint32(count)),
				binary.AppendUvarint(nil, uint64(uint32(count))),
			} {
				rest := append(append(append([]byte(nil), prefix...), body...), 1, 2, 3, 4, 5, 6, 7, 8)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				checkParse(t, p, 9, rest, false)
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
					t.Errorf("%s v%d count %d: %d bytes allocated", kmsg.NameForKey(p.key), p.version, count, grew)
				}
			}
		}
	}
}
