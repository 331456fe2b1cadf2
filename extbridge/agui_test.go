package extbridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/npmtest"
)

// aguiValidator checks AG-UI events with @ag-ui/core 1.0's own schemas
// (EventSchema, which the opentask extension validates every protocol-2
// frame with, dropping invalid ones): a small Node script in
// testdata/agui, installed by npm into a cache folder of its own on first
// use. Without node or npm the tests that need it skip, or fail when CI is
// set.
type aguiValidator struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	mu  sync.Mutex
}

func newAGUIValidator(t testing.TB) *aguiValidator {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatalf("AG-UI validator unavailable in CI: %s", msg)
		}
		t.Skipf("AG-UI validator unavailable (%s): install Node 20 and npm to run this test", msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("no node")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("no npm")
	}
	dir, err := aguiInstall(npm)
	if err != nil {
		unavailable("%v", err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "validate.js"))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	v := &aguiValidator{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	v.out.Buffer(make([]byte, 64<<10), 16<<20)
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	return v
}

// Validate returns "" when event passes the schemas, else the reason.
func (v *aguiValidator) Validate(event []byte) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if strings.ContainsAny(string(event), "\n\r") {
		return "", fmt.Errorf("event spans lines")
	}
	if _, err := v.in.Write(append(append([]byte(nil), event...), '\n')); err != nil {
		return "", err
	}
	if !v.out.Scan() {
		return "", fmt.Errorf("validator ended: %v", v.out.Err())
	}
	line := v.out.Text()
	if line == "ok" {
		return "", nil
	}
	return strings.TrimPrefix(line, "invalid "), nil
}

// aguiInstall installs testdata/agui (its package-lock.json pins
// @ag-ui/core 1.0.0 and zod) into its cache folder, once per machine, and
// returns the folder.
func aguiInstall(npm string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return npmtest.Install(ctx, npm, filepath.Join("testdata", "agui"), "agui", []string{"package.json", "package-lock.json", "validate.js"})
}
