package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// AddListener adds, before Start, a client listener named after its
// security protocol (SASL_SSL, SSL, ...) at addr, with more keys
// (key=value) for it, to the broker's PLAINTEXT one and those added
// before: clients may then connect there, while the harness keeps using
// Addr.
func (t *StrataTarget) AddListener(protocol, addr string, props ...string) {
	t.listeners = append(t.listeners, protocol+"://"+addr)
	t.protocols = append(t.protocols, protocol+":"+protocol)
	t.args = append(t.args,
		"--override", "listeners="+strings.Join(append([]string{"PLAINTEXT://" + t.addr}, t.listeners...), ","),
		"--override", "listener.security.protocol.map="+strings.Join(append([]string{"PLAINTEXT:PLAINTEXT"}, t.protocols...), ","))
	for _, p := range props {
		t.args = append(t.args, "--override", p)
	}
}

// AddListener adds, before Start, a client listener named after its
// security protocol at addr, with more keys for it, to the broker's
// listeners: the lines appended to server.properties override the
// template's (and those of listeners added before), as Java's Properties
// keeps a key's last value.
func (t *KafkaTarget) AddListener(protocol, addr string, props ...string) error {
	data, err := os.ReadFile(t.props)
	if err != nil {
		return err
	}
	values := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			values[k] = v
		}
	}
	var add strings.Builder
	for key, entry := range map[string]string{
		"listeners":                      protocol + "://" + addr,
		"advertised.listeners":           protocol + "://" + addr,
		"listener.security.protocol.map": protocol + ":" + protocol,
	} {
		if values[key] == "" {
			return fmt.Errorf("%s: no %s to add listener %s to", t.props, key, protocol)
		}
		fmt.Fprintf(&add, "%s=%s,%s\n", key, values[key], entry)
	}
	for _, p := range props {
		add.WriteString(p + "\n")
	}
	return os.WriteFile(t.props, append(data, add.String()...), 0o644)
}
