package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// Process is a long-running program to run inside a lab namespace.
type Process struct {
	Name  string   // unique in the lab; the log is StateDir/logs/Name.log
	NetNS string   // namespace name, e.g. lab.Nodes[0].NetNS; "" runs it in ours
	Args  []string // program and its arguments
	Env   []string // added to this process's environment
	// Cgroup, when set, is the cgroup the process is moved into once started (a lab
	// node's daemons go into the node's cgroup, beside its pods).
	Cgroup string
}

// ProcessRecord is a started process as lab.json remembers it.
type ProcessRecord struct {
	Name      string   `json:"name"`
	NetNS     string   `json:"netns"`
	Args      []string `json:"args"`
	PID       int      `json:"pid"`
	StartTime uint64   `json:"startTime"` // clock ticks after boot (/proc/PID/stat): tells our process from a reused PID
	Log       string   `json:"log"`
	Cgroup    string   `json:"cgroup,omitempty"`
}

var processNameRE = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_.]*$`)

func logDir(l *Lab) string { return filepath.Join(l.StateDir, "logs") }

// Command returns a command that runs program with args in the lab namespace netns (a name
// in NetNSDir; "" for our own namespace) but in our mount namespace, unlike `ip netns exec`.
// The caller wires its stdio and runs it.
func Command(ctx context.Context, netns, program string, args ...string) *exec.Cmd {
	if netns == "" {
		return exec.CommandContext(ctx, program, args...)
	}
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + NetNSPath(netns), "--", program}, args...)...)
}

// Start runs p detached (own session, outliving us) with stdout and stderr appended to its
// log, records it in lab.json and returns its PID. nsenter execs the program in place, so
// the PID is the program's.
func (l *Lab) Start(p Process) (int, error) {
	if !processNameRE.MatchString(p.Name) {
		return 0, fmt.Errorf("process name %q: want letters, digits, '-', '_' or '.'", p.Name)
	}
	if len(p.Args) == 0 {
		return 0, fmt.Errorf("process %q: no command given", p.Name)
	}
	if p.NetNS != "" {
		if _, err := os.Stat(NetNSPath(p.NetNS)); err != nil {
			return 0, fmt.Errorf("process %q: network namespace %q: %w", p.Name, p.NetNS, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.Processes {
		if r.Name == p.Name && alive(r.PID, r.StartTime) {
			return 0, fmt.Errorf("process %q is already running as PID %d", p.Name, r.PID)
		}
	}

	logPath := filepath.Join(logDir(l), p.Name+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("process %q: open log: %w", p.Name, err)
	}
	defer log.Close()
	if p.Cgroup != "" {
		// Made before the process starts: it may look at its cgroup (minilet's --node-cgroup
		// is its parent) before it is moved in.
		if err := cm.MakeCgroup(p.Cgroup); err != nil {
			return 0, fmt.Errorf("process %q: %w", p.Name, err)
		}
	}
	cmd := Command(context.Background(), p.NetNS, p.Args[0], p.Args[1:]...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %q (%s): %w", p.Name, strings.Join(p.Args, " "), err)
	}
	go cmd.Wait() // reap it should it exit while we run; otherwise it outlives us
	pid := cmd.Process.Pid
	if p.Cgroup != "" {
		// Moved before it forks anything of its own: nsenter has just exec'd it.
		if err := cm.AddProcess(p.Cgroup, pid); err != nil {
			_ = cmd.Process.Kill()
			return 0, fmt.Errorf("start %q: %w%s", p.Name, err, logEnd(logPath)) // it died at once: say why
		}
	}
	// A process that died at once has no start time; its record (0) then never matches a live
	// process, and its log is still found.
	start, _, _ := procStat(pid)

	rec := ProcessRecord{Name: p.Name, NetNS: p.NetNS, Args: p.Args, PID: pid, StartTime: start, Log: logPath, Cgroup: p.Cgroup}
	l.Processes = append(without(l.Processes, p.Name), rec)
	if err := l.save(); err != nil {
		return pid, fmt.Errorf("started %q as PID %d but could not record it: %w", p.Name, pid, err)
	}
	return pid, nil
}

// Exited tells, for a recorded process that is no longer running, that it exited and how
// its log ends; nil while it runs.
func (l *Lab) Exited(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.Processes {
		if r.Name == name {
			if alive(r.PID, r.StartTime) {
				return nil
			}
			return fmt.Errorf("%s (PID %d) exited%s", name, r.PID, logEnd(r.Log))
		}
	}
	return fmt.Errorf("lab %q has no process %q", l.Name, name)
}

// logEnd is "; its log PATH ends:" and the log's last lines, or "" when it is empty.
func logEnd(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("; its log %s ends:\n%s", path, b[max(0, len(b)-2000):])
}

// Stop ends the recorded process name: SIGTERM, up to grace to exit, then SIGKILL. Stopping
// a process that already ended only drops its record.
func (l *Lab) Stop(name string, grace time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var target []ProcessRecord
	for _, r := range l.Processes {
		if r.Name == name {
			target = append(target, r)
		}
	}
	if len(target) == 0 {
		return fmt.Errorf("lab %q has no process %q", l.Name, name)
	}
	if err := terminate(target, grace); err != nil {
		return fmt.Errorf("stop %q: %w", name, err)
	}
	l.Processes = without(l.Processes, name)
	return l.save()
}

func without(recs []ProcessRecord, name string) []ProcessRecord {
	out := make([]ProcessRecord, 0, len(recs))
	for _, r := range recs {
		if r.Name != name {
			out = append(out, r)
		}
	}
	return out
}

// terminate sends SIGTERM to every live process in procs, waits up to grace for them to exit,
// then SIGKILLs the rest and waits a little for the kernel to finish them.
func terminate(procs []ProcessRecord, grace time.Duration) error {
	signal := func(sig syscall.Signal) (running []ProcessRecord) {
		for _, p := range procs {
			if alive(p.PID, p.StartTime) {
				syscall.Kill(p.PID, sig)
				running = append(running, p)
			}
		}
		return running
	}
	if waitGone(signal(syscall.SIGTERM), grace) {
		return nil
	}
	if left := signal(syscall.SIGKILL); !waitGone(left, 5*time.Second) {
		var pids []string
		for _, p := range left {
			if alive(p.PID, p.StartTime) {
				pids = append(pids, strconv.Itoa(p.PID))
			}
		}
		return fmt.Errorf("processes %s survived SIGKILL", strings.Join(pids, ", "))
	}
	return nil
}

func waitGone(procs []ProcessRecord, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		running := false
		for _, p := range procs {
			running = running || alive(p.PID, p.StartTime)
		}
		if !running {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive tells whether pid is still the process that started at start. A zombie counts as
// gone once it alone is left of its threads: it has exited and only waits for its parent.
// A multi-threaded process's leader turns zombie while its other threads still exit, and
// those still hold its files (a listening socket a restarted daemon must bind again).
func alive(pid int, start uint64) bool {
	got, state, err := procStat(pid)
	if err != nil || got != start || state == 'X' {
		return false
	}
	if state != 'Z' {
		return true
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}

// procStat reads a process's start time and state from /proc/PID/stat.
func procStat(pid int) (start uint64, state byte, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces; fields after it
	// start with field 3, the state. The start time is field 22.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, 0, errors.New("unexpected /proc stat format")
	}
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 20 {
		return 0, 0, errors.New("unexpected /proc stat format")
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return start, fields[0][0], err
}

// Restart stops the recorded process name (SIGTERM, then SIGKILL after grace; 0 is a
// crash) and starts it again with the same namespace and arguments, returning its PID.
func (l *Lab) Restart(name string, grace time.Duration) (int, error) {
	l.mu.Lock()
	var rec *ProcessRecord
	for i := range l.Processes {
		if l.Processes[i].Name == name {
			rec = &l.Processes[i]
		}
	}
	var p Process
	if rec != nil {
		p = Process{Name: rec.Name, NetNS: rec.NetNS, Args: rec.Args, Cgroup: rec.Cgroup}
	}
	l.mu.Unlock()
	if rec == nil {
		return 0, fmt.Errorf("lab %q has no process %q", l.Name, name)
	}
	if err := l.Stop(name, grace); err != nil {
		return 0, err
	}
	return l.Start(p)
}
