package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/internal/extension"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// MarkerEnv is the environment variable Launch sets, to a value unique to
// each Browser, in Chromium's environment. Every process Chromium starts,
// native hosts included, inherits it: that is how Close finds them all,
// even those Chromium started in process groups of their own or that
// outlived it.
const MarkerEnv = "AGENTBRIDGE_BROWSERTEST_RUN"

// Options configures Launch. The zero value starts headless Chromium from
// PATH with the reference extension's native messaging side on and no
// native host installed.
type Options struct {
	// Chromium is the browser executable. "" means FindChromium("").
	Chromium string
	// Extension is the reference extension's configuration, written into
	// its folder.
	Extension extension.Config
	// HostPath is the native messaging host executable Chromium starts
	// when the extension calls connectNative; Launch installs its manifest
	// into the profile. "" installs none.
	HostPath string
	// Env holds extra environment variables, "KEY=value", for Chromium.
	// Native hosts inherit Chromium's environment, so this is how
	// settings such as WEBOPERATOR_API_TOKEN reach a host. A TMPDIR here
	// is Chromium's, and Close leaves it; without one Chromium gets a
	// private TMPDIR (see Browser.TempDir).
	Env []string
	// Headful shows a browser window (a display is needed) instead of
	// running headless.
	Headful bool
	// WindowWidth and WindowHeight are the window's size in pixels. Zero
	// means 1280 by 800.
	WindowWidth, WindowHeight int
	// URL is the page the browser opens first. "" means about:blank.
	URL string
	// Args are extra Chromium command-line arguments.
	Args []string
	// Dir is the folder that holds the profile and the extension. "" means
	// a new temporary folder.
	Dir string
	// KeepDir keeps Dir (or the temporary folder) after Close.
	KeepDir bool
	// Output receives Chromium's standard output and error (and so the
	// extension's log when Extension.Log is set). nil discards them; the
	// last 64 KiB are kept for Browser.Output either way.
	Output io.Writer
	// Logger receives the harness's own progress messages. nil is silent.
	Logger *slog.Logger
	// WriteExtension, when set, writes the extension into its folder in
	// place of extension.Write(dir, Extension); Extension's NativeHost and
	// Log still apply. The public browsertest package writes the public
	// extension package's folder with it.
	WriteExtension func(dir string) error
	// DevTools opens the DevTools protocol on a pipe between the harness
	// and Chromium (--remote-debugging-pipe; no port is opened), which
	// Browser.StopExtensionWorker uses.
	DevTools bool
}

// Browser is a running Chromium with the reference extension loaded.
// Close stops it and every process it started. Its methods are safe for
// concurrent use.
type Browser struct {
	// Chromium is the executable that was started.
	Chromium string
	// Dir is the folder that holds the profile and the extension.
	Dir string
	// ProfileDir is Chromium's --user-data-dir.
	ProfileDir string
	// ExtensionDir is the extension folder given to --load-extension.
	ExtensionDir string
	// TempDir is Chromium's TMPDIR, which its native hosts inherit.
	// Chromium leaves folders of its own there when it is stopped
	// (org.chromium.Chromium.*, holding its singleton socket), so unless
	// Options.Env sets TMPDIR it is a private folder Close removes: Dir/tmp,
	// or a new folder in /tmp when Chromium's socket path would not fit in
	// a Unix socket address under Dir.
	TempDir string
	// HostManifest is the path of the installed native host manifest, or
	// "" when Options.HostPath was empty.
	HostManifest string

	cmd      *exec.Cmd
	marker   string
	exited   chan struct{}
	waitErr  error
	output   *tailBuffer
	log      *slog.Logger
	keepDir  bool
	ownDir   bool
	madeTemp bool      // Launch made TempDir
	tempOut  bool      // and it is outside Dir
	hostPath string    // the host executable, symlinks resolved
	devtools *devtools // nil unless Options.DevTools
	closeMu  sync.Mutex
	closed   bool
	closeErr error
}

// ErrUnsupported is returned by Launch on systems where the harness cannot
// track and stop Chromium's processes.
var ErrUnsupported = errors.New("browsertest: unsupported on this system")

// Supported returns nil where Launch can run, else ErrUnsupported.
func Supported() error { return supported() }

// gracePeriod is how long Close lets Chromium exit after SIGTERM before it
// kills it.
const gracePeriod = 5 * time.Second

// Launch writes the extension, installs the native host manifest when a
// host is given, and starts Chromium. ctx bounds the start only: the
// browser runs until Close, which the caller must call. opts may be nil.
func Launch(ctx context.Context, opts *Options) (_ *Browser, err error) {
	if err := supported(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := FindChromium(o.Chromium)
	if err != nil {
		return nil, err
	}
	b := &Browser{
		Chromium: path,
		exited:   make(chan struct{}),
		output:   &tailBuffer{max: 64 << 10},
		log:      o.Logger,
		keepDir:  o.KeepDir,
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.Dir = o.Dir; b.Dir == "" {
		if b.Dir, err = os.MkdirTemp("", "browsertest-*"); err != nil {
			return nil, fmt.Errorf("browsertest: %w", err)
		}
		b.ownDir = true
	} else if b.Dir, err = filepath.Abs(b.Dir); err != nil {
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	defer func() {
		if err != nil {
			b.removeDir()
		}
	}()
	b.ProfileDir = filepath.Join(b.Dir, "profile")
	b.ExtensionDir = filepath.Join(b.Dir, "extension")
	if err := os.MkdirAll(b.ProfileDir, 0o700); err != nil {
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	write := func(dir string) error { return extension.Write(dir, o.Extension) }
	if o.WriteExtension != nil {
		write = o.WriteExtension
	}
	if err := write(b.ExtensionDir); err != nil {
		return nil, err
	}
	if b.TempDir = envValue(o.Env, "TMPDIR"); b.TempDir == "" {
		if b.TempDir, b.tempOut, err = makeTempDir(b.Dir); err != nil {
			return nil, err
		}
		b.madeTemp = true
	}
	if o.HostPath != "" {
		if b.HostManifest, err = installHost(b.ProfileDir, o.HostPath, o.Extension.NativeHost); err != nil {
			return nil, err
		}
		if b.hostPath, err = filepath.EvalSymlinks(o.HostPath); err != nil {
			return nil, fmt.Errorf("browsertest: native host: %w", err)
		}
		if b.hostPath, err = filepath.Abs(b.hostPath); err != nil {
			return nil, fmt.Errorf("browsertest: native host: %w", err)
		}
	}

	var mark [12]byte
	rand.Read(mark[:])
	b.marker = hex.EncodeToString(mark[:])
	b.cmd = exec.Command(path, chromiumArgs(b, &o)...)
	b.cmd.Env = append(os.Environ(),
		// Chromium writes caches under XDG folders: keep them in Dir.
		"XDG_CONFIG_HOME="+filepath.Join(b.Dir, "xdg-config"),
		"XDG_CACHE_HOME="+filepath.Join(b.Dir, "xdg-cache"),
		"TMPDIR="+b.TempDir,
	)
	b.cmd.Env = append(b.cmd.Env, o.Env...)
	b.cmd.Env = append(b.cmd.Env, MarkerEnv+"="+b.marker)
	var out io.Writer = b.output
	if o.Output != nil {
		out = io.MultiWriter(b.output, o.Output)
	}
	b.cmd.Stdout = out
	b.cmd.Stderr = out
	b.cmd.WaitDelay = time.Second
	setProcessGroup(b.cmd)
	var devtools *devtools
	if o.DevTools {
		if b.cmd.ExtraFiles, devtools, err = devtoolsPipes(); err != nil {
			return nil, err
		}
	}
	err = b.cmd.Start()
	for _, f := range b.cmd.ExtraFiles {
		f.Close() // Chromium's ends: its copies are its own now
	}
	if err != nil {
		if devtools != nil {
			devtools.w.Close()
			devtools.r.Close()
		}
		return nil, fmt.Errorf("browsertest: starting Chromium: %w", err)
	}
	if devtools != nil {
		devtools.start()
		b.devtools = devtools
	}
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	b.log.Info("browsertest: Chromium started", "pid", b.cmd.Process.Pid, "dir", b.Dir)
	if err := ctx.Err(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// maxSingletonSocketPath is the longest socket path Chromium can bind:
// sun_path holds 108 bytes on Linux and 104 on macOS and the BSDs, with
// the terminating NUL. Chromium refuses to start (a FATAL "Socket path too
// long") when its singleton socket's path in TMPDIR is longer.
const maxSingletonSocketPath = 103

// singletonSocketFits says whether Chromium's singleton socket fits in a
// sockaddr_un when TMPDIR is tmp.
func singletonSocketFits(tmp string) bool {
	return len(filepath.Join(tmp, "org.chromium.Chromium.XXXXXX", "SingletonSocket")) <= maxSingletonSocketPath
}

// makeTempDir makes Chromium's private TMPDIR: dir/tmp when the singleton
// socket fits there, else a new folder in /tmp (or the system's temporary
// folder), which outside says is not in dir.
func makeTempDir(dir string) (tmp string, outside bool, err error) {
	tmp = filepath.Join(dir, "tmp")
	if singletonSocketFits(tmp) {
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return "", false, fmt.Errorf("browsertest: %w", err)
		}
		return tmp, false, nil
	}
	if tmp, err = os.MkdirTemp("/tmp", "browsertest-tmp-*"); err != nil {
		if tmp, err = os.MkdirTemp("", "browsertest-tmp-*"); err != nil {
			return "", false, fmt.Errorf("browsertest: %w", err)
		}
	}
	return tmp, true, nil
}

// envValue returns the value of the last KEY=value entry of env for key,
// as exec.Cmd applies them, or "".
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

func installHost(profile, hostPath, name string) (string, error) {
	if name == "" {
		name = extension.NativeHostName
	}
	abs, err := filepath.Abs(hostPath)
	if err != nil {
		return "", fmt.Errorf("browsertest: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("browsertest: native host: %w", err)
	}
	loc, err := nativemsg.ManifestLocation(nativemsg.Chromium, nativemsg.UserScope, name,
		&nativemsg.LocationOptions{UserDataDir: profile})
	if err != nil {
		return "", err
	}
	m := &nativemsg.HostManifest{
		Name:           name,
		Description:    "native host started by the agentbridge test harness",
		Path:           abs,
		Type:           "stdio",
		AllowedOrigins: []string{extension.NativeOrigin},
	}
	if err := nativemsg.Install(m, loc, nil); err != nil {
		return "", err
	}
	return loc.ManifestPath, nil
}

func chromiumArgs(b *Browser, o *Options) []string {
	w, h := o.WindowWidth, o.WindowHeight
	if w == 0 {
		w = 1280
	}
	if h == 0 {
		h = 800
	}
	args := []string{
		"--no-sandbox",
		"--disable-gpu",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--password-store=basic",
		"--use-mock-keychain",
		fmt.Sprintf("--window-size=%d,%d", w, h),
		"--user-data-dir=" + b.ProfileDir,
		"--load-extension=" + b.ExtensionDir,
		"--disable-extensions-except=" + b.ExtensionDir,
	}
	if !o.Headful {
		args = append(args, "--headless=new")
	}
	if o.DevTools {
		args = append(args, "--remote-debugging-pipe")
	}
	if o.Extension.Log {
		// Service-worker console messages reach standard error only with
		// logging on.
		args = append(args, "--enable-logging=stderr", "--v=0")
	}
	args = append(args, o.Args...)
	url := o.URL
	if url == "" {
		url = "about:blank"
	}
	return append(args, url)
}

// Pid returns the process id of Chromium's browser process.
func (b *Browser) Pid() int { return b.cmd.Process.Pid }

// Exited returns a channel closed once Chromium's browser process has
// exited.
func (b *Browser) Exited() <-chan struct{} { return b.exited }

// Processes returns the ids of the live processes Chromium started,
// itself included: renderers, helpers and native hosts. On systems
// without /proc it knows only Chromium's own process.
func (b *Browser) Processes() []int {
	return markedProcesses(b.marker, b.cmd.Process.Pid, b.exited)
}

// HostPids returns the ids of the live native host processes Chromium
// started from Options.HostPath (nil where /proc is not available), so a
// test can see a host come up, or exit when the extension drops its port.
func (b *Browser) HostPids() []int {
	if b.hostPath == "" {
		return nil
	}
	var pids []int
	for _, p := range b.Processes() {
		if processExe(p) == b.hostPath {
			pids = append(pids, p)
		}
	}
	return pids
}

// Output returns the last 64 KiB Chromium wrote to its standard output
// and error.
func (b *Browser) Output() []byte { return b.output.Bytes() }

// SetExtensionConfig rewrites the extension's configuration file. The
// extension reads it again before each connection attempt, so the change
// applies at the next reconnect of each side.
func (b *Browser) SetExtensionConfig(cfg extension.Config) error {
	return extension.WriteConfig(b.ExtensionDir, cfg)
}

// Close stops Chromium and every process it started: SIGTERM to its
// process group first, so that Chromium closes its native hosts' pipes,
// then SIGKILL to whatever is still alive after a grace period, native
// hosts included. It waits until none of those processes is left, then
// removes the temporary folder unless Options.KeepDir was set. Close is
// idempotent and safe to call from any goroutine; it returns an error if a
// process survived or the folder could not be removed.
func (b *Browser) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed {
		return b.closeErr
	}
	b.closed = true
	b.closeErr = b.shutdown()
	return b.closeErr
}

func (b *Browser) shutdown() error {
	pid := b.cmd.Process.Pid
	signalGroup(pid, sigTerm)
	timer := time.NewTimer(gracePeriod)
	select {
	case <-b.exited:
		timer.Stop()
	case <-timer.C:
		b.log.Warn("browsertest: Chromium ignored SIGTERM; killing it", "pid", pid)
		signalGroup(pid, sigKill)
		<-b.exited
	}
	if b.devtools != nil {
		b.devtools.close()
	}
	var errs []error
	if left := killAll(b.Processes, gracePeriod); len(left) > 0 {
		errs = append(errs, fmt.Errorf("browsertest: processes %v survived Chromium", left))
	}
	if err := b.removeDir(); err != nil {
		errs = append(errs, err)
	}
	b.log.Info("browsertest: Chromium stopped", "pid", pid, "exit", b.waitErr)
	return errors.Join(errs...)
}

func (b *Browser) removeDir() error {
	var err error
	if b.madeTemp && b.tempOut {
		// Only Chromium's leftovers: removed even with KeepDir.
		if err = os.RemoveAll(b.TempDir); err != nil {
			return fmt.Errorf("browsertest: removing %s: %w", b.TempDir, err)
		}
	}
	if b.keepDir || b.Dir == "" {
		return nil
	}
	if b.ownDir {
		err = os.RemoveAll(b.Dir)
	} else {
		// A folder the caller gave is kept; only what Launch made goes.
		err = errors.Join(os.RemoveAll(b.ProfileDir), os.RemoveAll(b.ExtensionDir),
			os.RemoveAll(filepath.Join(b.Dir, "xdg-config")), os.RemoveAll(filepath.Join(b.Dir, "xdg-cache")))
		if b.madeTemp && !b.tempOut {
			err = errors.Join(err, os.RemoveAll(b.TempDir))
		}
	}
	if err != nil {
		return fmt.Errorf("browsertest: removing %s: %w", b.Dir, err)
	}
	return nil
}

// killAll sends SIGKILL to the processes list returns until none is left
// or wait has passed, and returns those still alive then.
func killAll(list func() []int, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		left := list()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, p := range left {
			killProcess(p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
