#if canImport(Glibc)
import Glibc

/// Waits, on the calling thread, until a file in one directory is written to (Linux inotify).
///
/// LMDB writes committed pages and the meta page of every commit with `pwrite` (this library
/// does not use `MDB_WRITEMAP`), from whichever process commits, so each commit to `data.mdb`
/// shows up as `IN_MODIFY`. The directory rather than the file is watched: compaction renames a
/// new `data.mdb` into place (`IN_MOVED_TO`), and a watch on the old file would go quiet.
///
/// ```swift
/// let watch = try DirectoryWatch(path: folder)
/// while watch.wait(milliseconds: 1000) { … }  // something was written, or a second passed
/// ```
final class DirectoryWatch: Sendable {
    /// The inotify descriptor; owned by this object, closed in `deinit`. Only `wait` reads it,
    /// and `read` on one descriptor from several threads is safe (each event goes to one reader).
    private let descriptor: Int32

    /// - Throws: `.io` when inotify is unavailable (no more instances or watches allowed).
    init(path: String) throws {
        // Set up in a local and stored last: a throw once every stored property is set runs
        // `deinit`, so a close here as well would close the number twice — the second time,
        // whatever another thread had opened under it meanwhile (seen as a child process failing
        // to start with EBADF).
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            throw CouchetteError(.io, "cannot watch \(path): \(String(cString: strerror(errno)))")
        }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO)
        guard inotify_add_watch(descriptor, path, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw CouchetteError(.io, "cannot watch \(path): \(reason)")
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Blocks until something in the directory was written or `milliseconds` passed; true when
    /// something was. Pending events are consumed: several writes wake one wait.
    func wait(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&entry, 1, milliseconds)
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var changed = false
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 { changed = true }
        return changed
    }
}
#endif
