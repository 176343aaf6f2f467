package configdef

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestTopicDefs(t *testing.T) {
	synonymOf := map[string]string{}
	for i, d := range Topics() {
		if i > 0 && Topics()[i-1].Name >= d.Name {
			t.Errorf("topic configs not sorted or repeated at %s", d.Name)
		}
		if got, ok := TopicDef(d.Name); !ok || got.Name != d.Name || got.Scope != Topic {
			t.Errorf("TopicDef(%s) = %+v, %v", d.Name, got, ok)
		}
		if d.Doc == "" {
			t.Errorf("%s has no documentation", d.Name)
		}
		for _, s := range d.Synonyms {
			if other, ok := synonymOf[s.Name]; ok {
				t.Errorf("%s is the synonym of both %s and %s", s.Name, other, d.Name)
			}
			synonymOf[s.Name] = d.Name
		}
	}
}

// TestBrokerDefs checks that a key read from server.properties and
// described as a topic config's synonym has the synonym's type, and that
// only keys that are no synonym are listed read-only.
func TestBrokerDefs(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Brokers() {
		if seen[d.Name] {
			t.Errorf("%s defined twice", d.Name)
		}
		seen[d.Name] = true
		if got, ok := BrokerDef(d.Name); !ok || got.Scope != Broker {
			t.Errorf("BrokerDef(%s) = %+v, %v", d.Name, got, ok)
		}
		topicKey, _, dynamic := BrokerSynonymOf(d.Name)
		if dynamic {
			top, _ := TopicDef(topicKey)
			for _, s := range top.Synonyms {
				if s.Name == d.Name && SynonymType(top, s) != d.Type {
					t.Errorf("%s: type %d, but as the synonym of %s %d", d.Name, d.Type, topicKey, SynonymType(top, s))
				}
			}
		}
		if d.Described && (dynamic || d.Doc == "") {
			t.Errorf("%s: described read-only, but dynamic %v or without documentation", d.Name, dynamic)
		}
	}
}

// TestDefaultsParse checks that each default is a value of its type.
func TestDefaultsParse(t *testing.T) {
	for _, d := range append(Topics(), Brokers()...) {
		if d.Default == "" {
			continue
		}
		var err error
		switch d.Type {
		case Int, Long:
			var n int64
			if n, err = strconv.ParseInt(d.Default, 10, 64); err == nil && (n < d.Check.Min || n > d.Type.Max()) {
				t.Errorf("default of %s out of its range", d.Name)
			}
		case Double:
			_, err = strconv.ParseFloat(d.Default, 64)
		case Boolean:
			_, err = strconv.ParseBool(d.Default)
		}
		if err != nil {
			t.Errorf("default of %s: %v", d.Name, err)
		}
	}
}

// TestDynamicBrokersSorted: DynamicBrokerDef's binary search needs the
// table sorted by name.
func TestDynamicBrokersSorted(t *testing.T) {
	if !slices.IsSortedFunc(dynamicBrokers, func(a, b DynamicBroker) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("dynamicBrokers is not sorted by name")
	}
}
