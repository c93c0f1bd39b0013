import CLMDB
import Foundation

/// The floor: raw LMDB storing the JSON bytes under the id, with no document layer at all.
/// Reads copy the bytes out and do not decode them; an update writes pre-encoded new bytes.
public final class LMDBEngine: BenchmarkEngine {
    public static let name = "lmdb"
    private let path: String
    private var env: OpaquePointer?
    private var dbi: MDB_dbi = 0

    public init(directory: String, durable: Bool) async throws {
        path = directory + "/bench.lmdb"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try check(mdb_env_create(&env), "create")
        try check(mdb_env_set_mapsize(env, 16 << 30), "mapsize")
        let flags = UInt32(MDB_NOTLS) | (durable ? 0 : UInt32(MDB_NOMETASYNC))
        try check(mdb_env_open(env, path, flags, 0o644), "open")
        try write { txn in try self.check(mdb_dbi_open(txn, nil, 0, &self.dbi), "dbi") }
    }

    deinit { if env != nil { mdb_env_close(env) } }

    private func check(_ rc: Int32, _ what: String) throws {
        guard rc == 0 else { throw BenchmarkError.engine("lmdb \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    private func write(_ body: (OpaquePointer?) throws -> Void) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        do { try body(txn) } catch { mdb_txn_abort(txn); throw error }
        try check(mdb_txn_commit(txn), "commit")
    }

    private func put(_ txn: OpaquePointer?, _ id: String, _ json: String) throws {
        var idBytes = Array(id.utf8)
        var jsonBytes = Array(json.utf8)
        try idBytes.withUnsafeMutableBytes { key in
            try jsonBytes.withUnsafeMutableBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: key.baseAddress)
                var v = MDB_val(mv_size: value.count, mv_data: value.baseAddress)
                try check(mdb_put(txn, dbi, &k, &v, 0), "put")
            }
        }
    }

    public func insertAll(_ documents: [DocumentGenerator.GeneratedDocument]) async throws {
        try insertEncoded(documents.map { ($0.id, $0.json) })
    }

    /// Stores pre-encoded (id, JSON) pairs in one transaction.
    func insertEncoded(_ entries: [(String, String)]) throws {
        try write { txn in for (id, json) in entries { try put(txn, id, json) } }
    }

    /// The stored bytes of `id` (copied out), or nil.
    func value(of id: String) throws -> Data? {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "begin read")
        defer { mdb_txn_abort(txn) }
        var idBytes = Array(id.utf8)
        return idBytes.withUnsafeMutableBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: key.baseAddress)
            var v = MDB_val()
            guard mdb_get(txn, dbi, &k, &v) == 0 else { return nil }
            return Data(bytes: v.mv_data, count: v.mv_size)
        }
    }

    /// Visits every stored (id, bytes) pair in key order; the bytes are valid during the call only.
    func forEachEntry(_ body: (String, Data) throws -> Void) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "begin read")
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "cursor")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        while rc == 0 {
            let id = String(decoding: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), as: UTF8.self)
            let value = Data(bytesNoCopy: v.mv_data, count: v.mv_size, deallocator: .none)
            try body(id, value)
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
    }

    /// LMDB has one writer; concurrent writers would only queue, so this is serial.
    public func saveEach(_ documents: [DocumentGenerator.GeneratedDocument], writers: Int) async throws {
        for document in documents { try write { txn in try put(txn, document.id, document.json) } }
    }

    public func readEach(_ ids: [String]) async throws -> Int {
        var bytes = 0
        for id in ids {
            guard let copy = try value(of: id) else { throw BenchmarkError.engine("lmdb lost \(id)") }
            bytes += copy.count
        }
        return bytes
    }

    public func incrementVisits(_ ids: [String], updated: [String: String]) async throws {
        try write { txn in
            for id in ids {
                guard let json = updated[id] else { throw BenchmarkError.engine("no update prepared for \(id)") }
                try put(txn, id, json)
            }
        }
    }

    public func contents() async throws -> [String: String] {
        var result: [String: String] = [:]
        try forEachEntry { id, value in result[id] = canonicalJSON(text: String(decoding: value, as: UTF8.self)) }
        return result
    }

    public func diskSize() throws -> UInt64 { directorySize(path) }

    public func close() async throws {
        mdb_env_close(env)
        env = nil
    }
}

extension LMDBEngine {
    public func iterateAll() async throws -> Int {
        var count = 0
        try forEachEntry { _, value in
            if (try? JSONSerialization.jsonObject(with: value)) is [String: Any] { count += 1 }
        }
        return count
    }

    public func saveModels(_ tasks: [BenchTask]) async throws {
        let encoder = BenchTask.jsonEncoder()
        let encoded = try tasks.map { ($0.id ?? "", String(decoding: try encoder.encode($0.body), as: UTF8.self)) }
        try insertEncoded(encoded)
    }

    public func saveTaskDocuments(_ tasks: [BenchTask]) async throws {
        let encoded = try tasks.map { task in
            let data = try JSONSerialization.data(withJSONObject: task.properties, options: [.sortedKeys, .withoutEscapingSlashes])
            return (task.id ?? "", String(decoding: data, as: UTF8.self))
        }
        try insertEncoded(encoded)
    }

    public func readModels(_ ids: [String]) async throws -> Int {
        try BenchTask.decodePriorities(ids, engine: Self.name, stored: value(of:))
    }
}
