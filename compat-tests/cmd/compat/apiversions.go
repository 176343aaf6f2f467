package main

// The ApiVersions side by side: what each broker of a pair advertises on its
// client listener (keys, version ranges, supported and finalized features),
// written as apiversions.md next to the matrix, so every run records how far
// Strata's protocol is from the reference Kafka's and which open issue owns a gap.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiSnapshot is one broker's ApiVersions answer.
type apiSnapshot struct {
	keys      map[int16][2]int16 // key -> min, max
	supported map[string][2]int16
	finalized map[string]int16
}

func queryAPIVersions(addr string) (*apiSnapshot, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Kafka refuses (INVALID_REQUEST, no keys) a v3+ request without a client software name and version.
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-compat", "1.0"
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	s := &apiSnapshot{keys: map[int16][2]int16{}, supported: map[string][2]int16{}, finalized: map[string]int16{}}
	for _, k := range resp.ApiKeys {
		s.keys[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for _, f := range resp.SupportedFeatures {
		s.supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	for _, f := range resp.FinalizedFeatures {
		s.finalized[f.Name] = f.MaxVersionLevel
	}
	return s, nil
}

// keyOwner names the open issue a key Strata does not serve at Kafka's newest
// version belongs to: share groups (KIP-932) are issue 17, the rest issue 16.
func keyOwner(key int16) string {
	switch key {
	case 76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92:
		return "issue 17 (share groups)"
	case 55, 64, 80, 81, 94:
		return "a quorum key, served by cluster nodes only (a single node has no quorum)"
	}
	return "issue 16"
}

// writeAPIVersions queries each non-secure pair's first nodes and writes the
// comparison; a broker that does not answer is reported, not fatal.
func (h *harness) writeAPIVersions(dir string, pairs []brokerPair) error {
	var b strings.Builder
	b.WriteString("# ApiVersions side by side\n\nWhat each broker's client listener advertises, queried by the harness while the matrix ran.\n")
	for _, p := range pairs {
		st, kt := h.targets[p.strata], h.targets[p.kafka]
		if st == nil || kt == nil || st.secure {
			continue
		}
		ss, err := queryAPIVersions(strings.Split(st.addr, ",")[0])
		if err != nil {
			fmt.Fprintf(&b, "\n## %s / %s\n\n%s: %v\n", p.strata, p.kafka, p.strata, err)
			continue
		}
		ks, err := queryAPIVersions(strings.Split(kt.addr, ",")[0])
		if err != nil {
			fmt.Fprintf(&b, "\n## %s / %s\n\n%s: %v\n", p.strata, p.kafka, p.kafka, err)
			continue
		}
		renderAPIVersions(&b, p, ss, ks)
	}
	return os.WriteFile(filepath.Join(dir, "apiversions.md"), []byte(b.String()), 0o644)
}

func renderAPIVersions(b *strings.Builder, p brokerPair, s, k *apiSnapshot) {
	keys := map[int16]bool{}
	for key := range s.keys {
		keys[key] = true
	}
	for key := range k.keys {
		keys[key] = true
	}
	sorted := make([]int16, 0, len(keys))
	for key := range keys {
		sorted = append(sorted, key)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var newest, behind, missing, extra int
	var rows strings.Builder
	for _, key := range sorted {
		sv, sok := s.keys[key]
		kv, kok := k.keys[key]
		state := "newest"
		switch {
		case !kok:
			state, extra = "Strata only", extra+1
		case !sok:
			state, missing = "not served: "+keyOwner(key), missing+1
		case sv[1] < kv[1]:
			state, behind = "behind: "+keyOwner(key), behind+1
		default:
			newest++
		}
		fmt.Fprintf(&rows, "| %d | %s | %s | %s | %s |\n", key, kmsg.NameForKey(key), versionRange(kv, kok), versionRange(sv, sok), state)
	}
	fmt.Fprintf(b, "\n## %s / %s\n\n%s advertises %d keys; %s serves %d of them at its newest version, %d at an older one, and not %d; %d keys are Strata's only.\n\n",
		p.strata, p.kafka, p.kafka, len(k.keys), p.strata, newest, behind, missing, extra)
	b.WriteString("| key | name | " + p.kafka + " | " + p.strata + " | |\n|---|---|---|---|---|\n")
	b.WriteString(rows.String())
	names := map[string]bool{}
	for n := range s.supported {
		names[n] = true
	}
	for n := range k.supported {
		names[n] = true
	}
	var fs []string
	for n := range names {
		fs = append(fs, n)
	}
	sort.Strings(fs)
	b.WriteString("\n| feature | " + p.kafka + " supported | finalized | " + p.strata + " supported | finalized |\n|---|---|---|---|---|\n")
	for _, n := range fs {
		kr, kok := k.supported[n]
		sr, sok := s.supported[n]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", n, versionRange(kr, kok), finalizedLevel(k, n), versionRange(sr, sok), finalizedLevel(s, n))
	}
}

func versionRange(v [2]int16, ok bool) string {
	if !ok {
		return "-"
	}
	if v[0] == v[1] {
		return fmt.Sprint(v[0])
	}
	return fmt.Sprintf("%d-%d", v[0], v[1])
}

func finalizedLevel(s *apiSnapshot, name string) string {
	if l, ok := s.finalized[name]; ok {
		return fmt.Sprint(l)
	}
	return "-"
}
