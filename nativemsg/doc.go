// Package nativemsg implements Chrome's native messaging: the framing both
// sides of a native messaging port speak, a native host's standard streams,
// its launch arguments, and the host manifests that make a host known to a
// browser.
//
// # Framing
//
// Each message is a frame: its length as a uint32 in little-endian byte
// order, then that many bytes of UTF-8 JSON. There is no delimiter and no
// version field.
//
//	conn, err := nativemsg.OpenStdio(nil) // in a host's main
//	if err != nil { ... }
//	var msg map[string]any
//	for {
//		if err := conn.Decode(&msg); err != nil {
//			break // io.EOF: the extension disconnected
//		}
//		conn.Encode(map[string]any{"kind": "pong"})
//	}
//
// # Limits
//
// Chrome sends at most 64 MiB to a host and accepts at most 1 MiB
// (1,048,576 bytes) from one: it closes the port, and the extension loses
// every pending request, on a frame one byte longer. A [Reader] refuses frames
// over its limit ([DefaultReadLimit], 64 MiB) before allocating anything, so a
// bogus 4 GiB header costs nothing; a [Writer] refuses frames over its limit
// ([DefaultWriteLimit], 1 MiB) and writes nothing, so the caller can answer
// with an error instead of losing the port. Both limits are configurable.
// A body over 1 MiB grows only as its bytes arrive, so a header that lies
// about its length costs nothing either. A frame under the limit is written
// in one Write. A header over the read limit is a [*FrameSizeError], after
// which the stream is unusable (it cannot be resynchronised); an empty or
// non-JSON body is an error, and the next frame still reads. Errors never
// contain message bytes.
//
// # Hosts
//
// A browser starts a host with its own standard streams as the port.
// Anything else written to standard output corrupts the stream, so
// [OpenStdio] moves the real standard output aside for frames and sends
// everything else written to standard output to standard error. On Linux
// it serves the standard pipes through Go's poller, so that [Conn.Close]
// interrupts a read blocked on a silent browser (a host can stop on
// SIGTERM at once).
// ParseLaunchArgs reads the caller's identity from the command line.
//
// [HostManifest], [ManifestLocation], [Install] and [Uninstall] write and
// remove the manifest for the browsers of [Browsers] (Chrome, Chromium,
// Edge, Brave, Firefox), for the user or the whole system, on Linux and
// macOS, or into an explicit --user-data-dir (which needs no writes to the
// home directory, handy in tests). On Windows the browser finds manifests
// through the registry: [Install] also sets the browser's key under
// HKEY_CURRENT_USER (or HKEY_LOCAL_MACHINE for [SystemScope]) to the
// manifest's path, and [Uninstall] deletes it.
//
// # Concurrency
//
// A Writer (and so a [Conn]'s writing methods) is safe for concurrent use:
// each frame goes to the underlying writer in one Write, under a lock. A
// Reader is for one goroutine. Conn.Close is idempotent and safe to call
// from any goroutine.
//
// # Security
//
// allowed_origins is the only thing standing between a host and any
// extension in the browser: Validate accepts only exact
// "chrome-extension://<32 letters a-p>/" origins, never wildcards, and an
// absolute executable path. Install writes manifests atomically (a
// temporary file renamed into place) and Uninstall removes only the
// manifest file it is given. On Windows, Install reads the browser's key
// before writing anything: a key whose default value names another manifest
// (another host, or another copy of this one) is never overwritten, and
// Uninstall never deletes it; both return a [*RegistryConflictError]
// ([ErrRegistryConflict]) naming the key and both paths, unless
// [InstallOptions].Force. Paths are compared without regard to case, as
// Windows does. Only the one key …\NativeMessagingHosts\<name> is written
// or deleted.
//
// # Platforms
//
// Linux, macOS, Windows and FreeBSD are supported. Close interrupting a
// blocked read and 1 MiB pipes are Linux's (OSPipe's non-blocking pipes
// also macOS's); on Windows, os.Stdout and the standard output handle are
// pointed at standard error (no dup2: a C runtime that cached handle 1
// earlier still writes to it).
package nativemsg
