package mockserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a `mock-server` process of the benchmarks': a server of its
// own, so that its CPU is not the client's.
type Process struct {
	Cmd  *exec.Cmd
	Port int
	// Stderr is its standard error so far (a buffer that keeps filling).
	Stderr *bytes.Buffer
}

// StartProcess starts `bin mock-server` on 127.0.0.1 with args, on a free
// port it reads back from a port file in dir, and waits up to 10 s for it
// to listen.
func StartProcess(bin, dir string, args ...string) (*Process, error) {
	pf := filepath.Join(dir, "port")
	// A port file left in dir by an earlier server would be read as this
	// one's.
	if err := os.Remove(pf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"mock-server", "--host", "127.0.0.1", "--port", "0", "--port-file", pf}, args...)...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for range 400 {
		if b, err := os.ReadFile(pf); err == nil && len(bytes.TrimSpace(b)) > 0 {
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			return &Process{Cmd: cmd, Port: p, Stderr: stderr}, err
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, fmt.Errorf("mock-server did not start within 10 s: %s", strings.TrimSpace(stderr.String()))
}

// Stop stops the process with SIGTERM (its logs are complete then) and
// reports its failure, if it exited with one; one that does not stop
// within 30 s is killed.
func (p *Process) Stop() error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.Cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("mock-server: %v: %s", err, strings.TrimSpace(p.Stderr.String()))
		}
		return nil
	case <-time.After(30 * time.Second):
		p.Cmd.Process.Kill()
		<-done
		return errors.New("mock-server did not stop within 30 s of SIGTERM: killed")
	}
}
