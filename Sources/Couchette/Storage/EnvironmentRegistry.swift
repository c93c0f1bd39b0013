/// Shares one ``StorageEnvironment`` per folder within this process.
///
/// LMDB must not open the same environment twice in one process (closing either handle would drop
/// the other's locks), so every ``Database`` instance for a path borrows the same environment and
/// the last one to close it closes the file.
final class EnvironmentRegistry: Sendable {
    static let shared = EnvironmentRegistry()

    private struct Entry {
        let environment: StorageEnvironment
        var openers: Int
    }

    private let entries = Locked<[String: Entry]>([:])

    /// The environment at `path`, opened with `sizeLimit` and `syncsMetaPage` unless this process
    /// already has it open (then the first opener's settings stay).
    func acquire(path: String, sizeLimit: SizeLimit = SizeLimit(maximum: nil), syncsMetaPage: Bool = false) throws -> StorageEnvironment {
        try entries.withLock { entries in
            if var entry = entries[path] {
                entry.openers += 1
                entries[path] = entry
                return entry.environment
            }
            let environment = try StorageEnvironment(path: path, sizeLimit: sizeLimit, syncsMetaPage: syncsMetaPage)
            entries[path] = Entry(environment: environment, openers: 1)
            return environment
        }
    }

    func release(_ environment: StorageEnvironment) {
        let last: Bool = entries.withLock { entries in
            guard var entry = entries[environment.path], entry.environment === environment else { return false }
            entry.openers -= 1
            if entry.openers == 0 {
                entries[environment.path] = nil
                return true
            }
            entries[environment.path] = entry
            return false
        }
        if last { environment.close() }
    }

    /// How many open ``Database`` instances of this process use the environment at `path`.
    func openers(path: String) -> Int {
        entries.withLock { $0[path]?.openers ?? 0 }
    }
}
