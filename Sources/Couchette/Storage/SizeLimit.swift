/// How large an environment's memory map — and so its file — may grow
/// (``DatabaseConfiguration/maximumSize``).
struct SizeLimit: Sendable, Equatable {
    /// The most a map may ever be, in bytes.
    let maximum: Int
    /// Whether a user set the limit (the default is only LMDB's practical ceiling).
    let isUserSet: Bool

    /// Without a user limit, maps grow up to 1 TiB.
    static let ceiling = 1 << 40
    /// The smallest limit accepted: an empty database already uses a few dozen pages.
    static let minimum = 1 << 20

    init(maximum: Int?) {
        // Whole 64 KiB units: a multiple of every page size LMDB uses.
        self.maximum = maximum.map { $0 & ~0xFFFF } ?? Self.ceiling
        isUserSet = maximum != nil
    }

    /// Kept for writes that free space: a sixteenth of the limit, at least 256 KiB, at most 64 MiB.
    var reserve: Int { min(max(maximum / 16, 256 << 10), 64 << 20) }

    /// How large the map may grow for ordinary writes.
    var forWrites: Int { maximum - reserve }

    func fullError(_ path: String) -> CouchetteError {
        let setting = isUserSet ? " (DatabaseConfiguration.maximumSize)" : ""
        return CouchetteError(
            .full,
            "database at \(path) is full: it reached its maximum size of \(maximum) bytes\(setting); "
                + "delete or purge documents, then compact it, to make room")
    }
}
