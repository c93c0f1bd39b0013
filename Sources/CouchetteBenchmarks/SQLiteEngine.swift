import CSQLite
import Foundation

/// The store a Swift user would otherwise pick: SQLite in WAL mode, documents as JSON text keyed
/// by id, prepared statements reused, `synchronous=FULL` when durable (`NORMAL` otherwise).
public final class SQLiteEngine: BenchmarkEngine {
    public static let name = "sqlite"
    private let path: String
    private var db: OpaquePointer?
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    private var update: OpaquePointer?

    public init(directory: String, durable: Bool) async throws {
        path = directory + "/bench.sqlite"
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchmarkError.engine("cannot open \(path)") }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(durable ? "FULL" : "NORMAL")")
        try execute("CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID")
        insert = try prepareStatement("INSERT OR REPLACE INTO docs (id, body) VALUES (?, ?)")
        select = try prepareStatement("SELECT body FROM docs WHERE id = ?")
        update = try prepareStatement("UPDATE docs SET body = json_set(body, '$.visits', json_extract(body, '$.visits') + 1) WHERE id = ?")
    }

    deinit {
        for statement in [insert, select, update] { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkError.engine("sqlite: \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func prepareStatement(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchmarkError.engine("sqlite: \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    /// Binds the texts (valid only during the call, hence SQLITE_STATIC inside withCString) and steps.
    func step(_ statement: OpaquePointer?, _ texts: [String], row: ((OpaquePointer?) -> Void)? = nil) throws {
        defer { sqlite3_reset(statement) }
        func bind(_ index: Int) throws {
            if index == texts.count {
                var rc = sqlite3_step(statement)
                while rc == SQLITE_ROW {
                    row?(statement)
                    rc = sqlite3_step(statement)
                }
                guard rc == SQLITE_DONE else { throw BenchmarkError.engine("sqlite: \(String(cString: sqlite3_errmsg(db)))") }
                return
            }
            try texts[index].withCString { text in
                sqlite3_bind_text(statement, Int32(index + 1), text, -1, nil)
                try bind(index + 1)
            }
        }
        try bind(0)
    }

    func transaction(_ body: () throws -> Void) throws {
        try execute("BEGIN")
        do {
            try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        try execute("COMMIT")
    }

    func insertDocument(id: String, json: String) throws {
        try step(insert, [id, json])
    }

    /// The stored JSON of `id`, or nil.
    func body(of id: String) throws -> Data? {
        var data: Data?
        try step(select, [id]) { statement in
            let length = Int(sqlite3_column_bytes(statement, 0))
            if let text = sqlite3_column_blob(statement, 0) { data = Data(bytes: text, count: length) }
        }
        return data
    }

    public func insertAll(_ documents: [DocumentGenerator.GeneratedDocument]) async throws {
        try transaction {
            for document in documents { try insertDocument(id: document.id, json: document.json) }
        }
    }

    /// SQLite has one writer per database; concurrent writers would only queue, so this is serial.
    public func saveEach(_ documents: [DocumentGenerator.GeneratedDocument], writers: Int) async throws {
        for document in documents { try insertDocument(id: document.id, json: document.json) }
    }

    public func readEach(_ ids: [String]) async throws -> Int {
        var keys = 0
        for id in ids {
            guard let data = try body(of: id),
                let dictionary = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            else {
                throw BenchmarkError.engine("sqlite lost \(id)")
            }
            keys += dictionary.count
        }
        return keys
    }

    public func incrementVisits(_ ids: [String], updated: [String: String]) async throws {
        try transaction {
            for id in ids { try step(update, [id]) }
        }
    }

    public func contents() async throws -> [String: String] {
        let all = try prepareStatement("SELECT id, body FROM docs")
        defer { sqlite3_finalize(all) }
        var result: [String: String] = [:]
        try step(all, []) { statement in
            let id = String(cString: sqlite3_column_text(statement, 0))
            result[id] = canonicalJSON(text: String(cString: sqlite3_column_text(statement, 1)))
        }
        return result
    }

    public func diskSize() throws -> UInt64 {
        try execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return directorySize((path as NSString).deletingLastPathComponent)
    }

    public func close() async throws {
        for statement in [insert, select, update] { sqlite3_finalize(statement) }
        insert = nil
        select = nil
        update = nil
        sqlite3_close(db)
        db = nil
    }
}

extension SQLiteEngine {
    public func iterateAll() async throws -> Int {
        let all = try prepareStatement("SELECT id, body FROM docs")
        defer { sqlite3_finalize(all) }
        var count = 0
        try step(all, []) { statement in
            let length = Int(sqlite3_column_bytes(statement, 1))
            guard let text = sqlite3_column_blob(statement, 1) else { return }
            if (try? JSONSerialization.jsonObject(with: Data(bytes: text, count: length))) is [String: Any] { count += 1 }
        }
        return count
    }

    public func saveModels(_ tasks: [BenchTask]) async throws {
        let encoder = BenchTask.jsonEncoder()
        try transaction {
            for task in tasks {
                let json = String(decoding: try encoder.encode(task.body), as: UTF8.self)
                try insertDocument(id: task.id ?? "", json: json)
            }
        }
    }

    public func saveTaskDocuments(_ tasks: [BenchTask]) async throws {
        try transaction {
            for task in tasks {
                let data = try JSONSerialization.data(withJSONObject: task.properties, options: [.sortedKeys, .withoutEscapingSlashes])
                try insertDocument(id: task.id ?? "", json: String(decoding: data, as: UTF8.self))
            }
        }
    }

    public func readModels(_ ids: [String]) async throws -> Int {
        try BenchTask.decodePriorities(ids, engine: Self.name, stored: body(of:))
    }
}
