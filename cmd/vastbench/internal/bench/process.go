package bench

// Brokers in processes of their own, as users run the vastfake binary, and
// what such a process costs: its CPU time and resident memory, read from
// /proc (Linux only).

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vastfake/vastfake/internal/pages"
	"github.com/vastfake/vastfake/internal/testutil"
)

// SelfCPU is this process's own CPU time (user and system), not its
// children's; 0 where getrusage is missing, so that the client CPU rows of
// vastbench then read 0.
func SelfCPU() time.Duration {
	d, _ := testutil.ProcessCPU()
	return d
}

// Process is a broker running in a child process.
type Process struct {
	Addr string
	// Ready is how long the process took from its start to printing its
	// address and accepting a connection.
	Ready time.Duration
	cmd   *exec.Cmd
}

// StartProcess starts cmd, which must print the broker's address as the
// last word of the first line of its standard output ("listening on
// 127.0.0.1:41234" or just the address), and returns once the broker accepts a
// connection. Its standard error goes to this process's.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		p.Stop()
		return nil, fmt.Errorf("%s printed no address: %v", cmd.Path, lines.Err())
	}
	f := strings.Fields(lines.Text())
	if len(f) == 0 {
		p.Stop()
		return nil, fmt.Errorf("%s printed an empty line", cmd.Path)
	}
	p.Addr = f[len(f)-1]
	go func() { // keep reading, so that the child never blocks on a full pipe
		for lines.Scan() {
		}
	}()
	c, err := net.DialTimeout("tcp", p.Addr, 10*time.Second)
	if err != nil {
		p.Stop()
		return nil, err
	}
	c.Close()
	p.Ready = time.Since(start)
	return p, nil
}

// Stop ends the process with SIGTERM, or SIGKILL if it has not exited 10
// seconds later, and returns how long it took to exit.
func (p *Process) Stop() time.Duration {
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	return time.Since(start)
}

// Usage is a process's CPU time so far and its resident set now.
type Usage struct {
	CPU time.Duration
	RSS int64
}

// Usage reads the process's CPU time (user and system, all threads) and
// resident set size from /proc.
func (p *Process) Usage() (Usage, error) { return ProcUsage(p.cmd.Process.Pid) }

// ProcUsage reads pid's CPU time and resident set size from /proc. CPU
// time is the sum of the run times of its threads in nanoseconds
// (/proc/pid/task/*/schedstat), or, where the kernel keeps no schedstat,
// user+system time from /proc/pid/stat in clock ticks of 10ms.
func ProcUsage(pid int) (Usage, error) {
	var u Usage
	var err error
	if u.RSS, err = pages.Resident(pid); err != nil {
		return u, err
	}
	u.CPU, err = schedCPU(pid)
	if err != nil {
		u.CPU, err = statCPU(pid)
	}
	return u, err
}

func schedCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, errors.New("no schedstat")
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, errors.New("empty schedstat")
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		total += ns
	}
	return time.Duration(total), nil
}

// statCPU is utime+stime from /proc/pid/stat; Linux reports them in
// USER_HZ, 100 a second.
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}
