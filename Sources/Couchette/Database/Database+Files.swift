import CLMDB
import Foundation

extension Database {
    /// True when a database of that name exists in `directory` (default: the current directory).
    public static func exists(withName name: String, inDirectory directory: String? = nil) -> Bool {
        let folder = folder(name: name, directory: directory ?? FileManager.default.currentDirectoryPath)
        return FileManager.default.fileExists(atPath: folder + "/data.mdb")
    }

    /// Deletes the database's files. A database that does not exist is left alone.
    /// - Throws: `.busy` when it is open in this process, `.io` when the files cannot be removed.
    public static func delete(withName name: String, inDirectory directory: String? = nil) throws {
        try validate(name: name)
        try removeFiles(at: folder(name: name, directory: directory ?? FileManager.default.currentDirectoryPath))
    }

    /// Copies the database folder at `path` (for example a prebuilt database shipped with an app)
    /// to a new database `name` in `config.directory`.
    ///
    /// The copy is a consistent snapshot even while the source is open and being written.
    /// - Throws: `.notFound` when `path` holds no database, `.invalidParameter` when `name` already
    ///   exists, `.io` on file errors.
    public static func copy(
        fromPath path: String, toDatabase name: String,
        withConfig config: DatabaseConfiguration? = nil
    ) throws {
        try validate(name: name)
        let source = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: source + "/data.mdb") else {
            throw CouchetteError(.notFound, "no database at \(path)")
        }
        let configuration = config ?? DatabaseConfiguration()
        let destination = folder(name: name, directory: configuration.directory)
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw CouchetteError(.invalidParameter, "database '\(name)' already exists at \(destination)")
        }
        let environment = try EnvironmentRegistry.shared.acquire(path: source)
        defer { EnvironmentRegistry.shared.release(environment) }
        try environment.copy(to: destination)
        // Blob contents after the snapshot: each referenced one was written before its document
        // committed, and compaction (the only deletion) cannot run while this copy holds it open.
        do {
            try BlobStore(databasePath: source, fullSync: false).copyContents(to: destination)
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        }
    }

    static func validate(name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 240, !name.contains("/"), !name.contains("\0"),
            name != ".", name != ".."
        else {
            throw CouchetteError(.invalidParameter, "invalid database name '\(name)': use 1-240 bytes without '/'")
        }
    }

    static func folder(name: String, directory: String) -> String {
        let base = URL(fileURLWithPath: directory).standardizedFileURL.path
        return (base.hasSuffix("/") ? base : base + "/") + name + ".couchette"
    }

    static func removeFiles(at folder: String) throws {
        guard EnvironmentRegistry.shared.openers(path: folder) == 0 else {
            throw CouchetteError(.busy, "cannot delete \(folder): it is open")
        }
        guard FileManager.default.fileExists(atPath: folder) else { return }
        do {
            try FileManager.default.removeItem(atPath: folder)
        } catch {
            throw CouchetteError(.io, "cannot delete \(folder): \(error.localizedDescription)")
        }
    }
}

extension StorageEnvironment {
    /// Writes a compacted, consistent copy of this environment into a new folder `destination`.
    func copy(to destination: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
            try read { txn in
                try StorageError.check(
                    mdb_env_copy2(mdb_txn_env(txn.txn), destination, UInt32(MDB_CP_COMPACT)),
                    "copying to \(destination)")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw CouchetteError.wrapping(error)
        }
    }
}
