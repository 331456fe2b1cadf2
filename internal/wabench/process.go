package wabench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

// Targets a server process can serve.
const (
	TargetFloor   = "floor"   // the bare net/http floor
	TargetHandler = "handler" // the Handler, batches without a key
	TargetKeyed   = "keyed"   // the Handler, every batch with a fresh Idempotency-Key
)

// Keyed reports whether a target's batches carry an Idempotency-Key.
func Keyed(target string) bool { return strings.HasPrefix(target, TargetKeyed) }

// Serve is the server process: it serves target (the floor, or the site
// with store for keyed requests) on a loopback port, prints
// "listening <addr>" on stdout, then answers commands read from stdin, one
// a line, until stdin ends:
//
//	cpu             → "cpu <nanoseconds of CPU this process has used>"
//	profile <file>  → "ok" once a CPU profile is being written to file
//	stop            → "ok" once that profile is written
func Serve(target string, store webagents.IdempotencyStore, stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	origin := "http://" + ln.Addr().String()
	site, err := Site(origin, store)
	if err != nil {
		return err
	}
	defer site.Close()
	var h http.Handler = site
	switch {
	case target == TargetFloor:
		if h, err = Floor(origin, site); err != nil {
			return err
		}
	case target == TargetHandler || Keyed(target):
	default:
		return fmt.Errorf("wabench: unknown target %q", target)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if _, err := fmt.Fprintf(stdout, "listening %s\n", ln.Addr()); err != nil {
		return err
	}
	var profile *os.File
	lines := bufio.NewScanner(stdin)
	for lines.Scan() {
		cmd, arg, _ := strings.Cut(lines.Text(), " ")
		reply := "ok"
		switch cmd {
		case "cpu":
			cpu, err := processCPU()
			if err != nil {
				return err
			}
			reply = "cpu " + strconv.FormatInt(int64(cpu), 10)
		case "profile":
			if profile, err = os.Create(arg); err == nil {
				err = pprof.StartCPUProfile(profile)
			}
			if err != nil {
				return err
			}
		case "stop":
			pprof.StopCPUProfile()
			if profile != nil {
				if err := profile.Close(); err != nil {
					return err
				}
				profile = nil
			}
		default:
			return fmt.Errorf("wabench: unknown command %q", cmd)
		}
		if _, err := fmt.Fprintln(stdout, reply); err != nil {
			return err
		}
	}
	return lines.Err()
}

// Server is a server process started by [Start].
type Server struct {
	Target string
	Origin string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
}

// Start starts cmd, a program that calls [Serve] for target, and waits
// until it listens.
func Start(target string, cmd *exec.Cmd) (*Server, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Target: target, cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := s.readLine()
	addr, ok := strings.CutPrefix(line, "listening ")
	if err != nil || !ok {
		s.Close()
		return nil, fmt.Errorf("wabench: server %s did not start: %q %v", target, line, err)
	}
	s.Origin = "http://" + addr
	return s, nil
}

func (s *Server) readLine() (string, error) {
	line, err := s.out.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func (s *Server) command(cmd string) (string, error) {
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		return "", err
	}
	return s.readLine()
}

// CPU returns the CPU time the server process has used.
func (s *Server) CPU() (time.Duration, error) {
	line, err := s.command("cpu")
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(line, "cpu "), 10, 64)
	return time.Duration(ns), err
}

// StartProfile starts a CPU profile of the server process into file.
func (s *Server) StartProfile(file string) error { return s.ok(s.command("profile " + file)) }

// StopProfile stops the profile and writes it.
func (s *Server) StopProfile() error { return s.ok(s.command("stop")) }

func (s *Server) ok(line string, err error) error {
	if err == nil && line != "ok" {
		err = fmt.Errorf("wabench: server %s: %q", s.Target, line)
	}
	return err
}

// Close ends the server process (its stdin closes) and waits for it.
func (s *Server) Close() error {
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		return errors.Join(errors.New("wabench: server did not exit; killed"), <-done)
	}
}

// Round is what one round of load against one server measured.
type Round struct {
	Batches   int
	Elapsed   time.Duration
	CPU       time.Duration // the server process's
	Latencies []time.Duration
}

// Load sends the bench batch to s from clients keep-alive connections, each
// sending its next batch when the last is answered, for d; a keyed target's
// batches carry fresh keys made from keyPrefix and a counter.
func (s *Server) Load(ctx context.Context, clients int, d time.Duration, keys *Keys) (Round, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	// Warm the connections, so that dials are not in the round.
	if err := s.loop(ctx, client, clients, time.Now().Add(d/10), keys, nil); err != nil {
		return Round{}, err
	}
	before, err := s.CPU()
	if err != nil {
		return Round{}, err
	}
	lat := make([][]time.Duration, clients)
	start := time.Now()
	err = s.loop(ctx, client, clients, start.Add(d), keys, lat)
	elapsed := time.Since(start)
	after, cerr := s.CPU()
	if err = errors.Join(err, cerr); err != nil {
		return Round{}, err
	}
	r := Round{Elapsed: elapsed, CPU: after - before}
	for _, l := range lat {
		r.Latencies = append(r.Latencies, l...)
	}
	r.Batches = len(r.Latencies)
	return r, nil
}

func (s *Server) loop(ctx context.Context, client *http.Client, clients int, until time.Time, keys *Keys, lat [][]time.Duration) error {
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			var list []time.Duration
			var err error
			for err == nil && time.Now().Before(until) {
				key := ""
				if Keyed(s.Target) {
					key = keys.Next()
				}
				t0 := time.Now()
				err = send(client, NewRequest(ctx, s.Origin, key))
				list = append(list, time.Since(t0))
			}
			if lat != nil {
				lat[c] = list
			}
			errs <- err
		}()
	}
	var err error
	for range clients {
		err = errors.Join(err, <-errs)
	}
	return err
}

func send(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf [4096]byte
	n, _ := io.ReadFull(resp.Body, buf[:])
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Status: resp.StatusCode, Body: string(buf[:n])}
	}
	return nil
}
