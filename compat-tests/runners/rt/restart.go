package rt

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Restart asks the orchestrator to restart node (a node id) of the target
// the runner runs against, through the URL of --arg restart, and returns
// once the node serves again (cmd/compat/restart.go), with what the
// orchestrator answered.
func (a Args) Restart(ctx context.Context, node int32) (string, error) {
	url := a.Arg("restart", "")
	if url == "" {
		return "", fmt.Errorf("no --arg restart: the orchestrator runs this scenario")
	}
	ctx, cancel := context.WithTimeout(ctx, 250*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s&node=%d", url, node), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("restart node %d: %w", node, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("restart node %d: %s: %s", node, resp.Status, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}
