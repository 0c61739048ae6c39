package mockserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StartProcess starts `bin mock-server` on 127.0.0.1 with args, on a free
// port it reads back from a port file in dir, and returns the process, the
// port and its standard error so far (a buffer that keeps filling). It
// waits up to 10 s for the server to listen; the benchmarks' servers are
// processes of their own, so that their CPU is not the client's.
func StartProcess(bin, dir string, args ...string) (cmd *exec.Cmd, port int, stderr *bytes.Buffer, err error) {
	pf := filepath.Join(dir, "port")
	cmd = exec.Command(bin, append([]string{"mock-server", "--host", "127.0.0.1", "--port", "0", "--port-file", pf}, args...)...)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, nil, err
	}
	for range 400 {
		if b, err := os.ReadFile(pf); err == nil && len(bytes.TrimSpace(b)) > 0 {
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			return cmd, p, stderr, err
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, 0, nil, fmt.Errorf("mock-server did not start within 10 s: %s", strings.TrimSpace(stderr.String()))
}
