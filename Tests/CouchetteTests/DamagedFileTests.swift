import Foundation
import Testing

@testable import Couchette

/// A damaged `data.mdb` — truncated anywhere, or with garbage meta pages — gives `.corruption` at
/// open instead of killing the process inside LMDB (SIGBUS past the end of the file, SIGFPE on a
/// zero page size). Each damaged file is first opened by a child process (`couchette check`), so a
/// crash shows as a failed test rather than taking the suite down.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct DamagedFileTests {
    /// A database of 400 documents of 1.5 KB (about 1 MB), closed; returns its folder.
    private func healthyDatabase(in directory: TemporaryDirectory) async throws -> String {
        let database = try directory.open("damaged")
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<400 {
                try batch.save(
                    document: MutableDocument(id: "doc-\(number)").setInt(number, forKey: "n")
                        .setString(String(repeating: "\(number % 10)", count: 1500), forKey: "text"), in: collection)
            }
        }
        try await database.close()
        return directory.path + "/damaged.couchette"
    }

    private func fileSize(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
    }

    /// Runs `couchette check` on `folder`: it must exit (not die of a signal) and name the damage.
    private func expectRefusedByChild(_ folder: String, _ damage: String) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        let log = folder + ".log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        child.arguments = ["check", folder]
        child.standardOutput = output
        child.standardError = output
        try await startProcess(child)
        await waitForExit(child)
        try output.close()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(child.terminationReason == .exit, "\(damage): the child died of signal \(child.terminationStatus)")
        #expect(child.terminationStatus == 1, "\(damage): \(text)")
        #expect(text.contains("(corruption)"), "\(damage): \(text)")
    }

    /// Copies the healthy folder, damages the copy's `data.mdb`, and checks both the child and an
    /// open in this process refuse it with `.corruption`.
    private func expectRefused(
        _ healthy: String, in directory: TemporaryDirectory, _ damage: String,
        _ apply: (String) throws -> Void
    ) async throws {
        let name = try damagedCopy(healthy, in: directory, apply)
        try await expectRefusedByChild(directory.path + "/\(name).couchette", damage)
        await expectCouchetteError(.corruption) { _ = try Database(name: name, config: directory.configuration) }
    }

    /// Copies the healthy folder under a new name and damages the copy's `data.mdb`.
    private func damagedCopy(_ healthy: String, in directory: TemporaryDirectory, _ apply: (String) throws -> Void) throws -> String {
        let name = "case-\(UUID().uuidString.prefix(8))"
        let folder = directory.path + "/\(name).couchette"
        try FileManager.default.copyItem(atPath: healthy, toPath: folder)
        try apply(folder + "/data.mdb")
        return name
    }

    private func truncate(_ path: String, to size: Int) throws {
        try #require(Glibc.truncate(path, off_t(size)) == 0)
    }

    private func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
    }

    @Test func aTruncatedFileIsRefusedAtEveryCut() async throws {
        let directory = try TemporaryDirectory()
        let healthy = try await healthyDatabase(in: directory)
        let size = try fileSize(healthy + "/data.mdb")
        let pageSize = 4096
        try #require(size > 100 * pageSize)
        // The case (meta pages intact), just past them, half way, and pages before the end.
        for cut in [16 << 10, 3 * pageSize, size / 2, size - 20 * pageSize] {
            try await expectRefused(healthy, in: directory, "truncated to \(cut) of \(size) bytes") { try truncate($0, to: cut) }
        }
        // Shorter than the two meta pages.
        for cut in [100, pageSize, pageSize + 100] {
            try await expectRefused(healthy, in: directory, "truncated to \(cut) bytes") { try truncate($0, to: cut) }
        }
        // The healthy original still opens with everything in it.
        let database = try directory.open("damaged")
        #expect(try await database.defaultCollection().count == 400)
        try await database.close()
    }

    @Test func garbageMetaPagesAreRefused() async throws {
        let directory = try TemporaryDirectory()
        let healthy = try await healthyDatabase(in: directory)
        let pageSize = 4096
        func bothMetas(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
            try overwrite(path, at: offset, with: bytes)
            try overwrite(path, at: pageSize + offset, with: bytes)
        }
        try await expectRefused(healthy, in: directory, "page size 0 (LMDB divides by it)") {
            try bothMetas($0, at: 40, [0, 0, 0, 0])
        }
        try await expectRefused(healthy, in: directory, "page size 3000") {
            try bothMetas($0, at: 40, [0xB8, 0x0B, 0, 0])
        }
        try await expectRefused(healthy, in: directory, "last page 2^62") {
            try bothMetas($0, at: 136, [0, 0, 0, 0, 0, 0, 0, 0x40])
        }
        try await expectRefused(healthy, in: directory, "a root past the last page") {
            try bothMetas($0, at: 128, [0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0])
        }
        try await expectRefused(healthy, in: directory, "no magic number") {
            try bothMetas($0, at: 16, [1, 2, 3, 4])
        }
        try await expectRefused(healthy, in: directory, "random bytes") { path in
            var generator = ValueEncodingTests.SeededGenerator(seed: 15)
            try overwrite(path, at: 0, with: (0..<(3 * pageSize)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }

    /// A damaged leaf page can make LMDB return, inside a scanned range, a key without the range's
    /// prefix; code that slices keys past the prefix trapped on it.
    @Test func aDamagedKeyInsideAPageIsCorruptionNotATrap() async throws {
        let directory = try TemporaryDirectory()
        let healthy = try await healthyDatabase(in: directory)
        let pageSize = 4096
        let name = try damagedCopy(healthy, in: directory) { path in
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            func uint16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
            // A leaf page of the documents table: its second node's key is collection 0 + "doc-…".
            let damaged = (2..<(bytes.count / pageSize)).first { number in
                let page = number * pageSize
                guard uint16(page + 10) & 0x02 != 0, (uint16(page + 12) - 16) / 2 >= 2 else { return false }
                let node = page + uint16(page + 18)
                let keySize = uint16(node + 6)
                return keySize > 8 && bytes[(node + 8)..<(node + 16)].elementsEqual([0, 0, 0, 0] + Array("doc-".utf8))
            }
            let page = try #require(damaged) * pageSize
            let node = page + uint16(page + 18)
            bytes[node + 6] = 2
            bytes[node + 7] = 0
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        try await expectRefusedByChild(directory.path + "/\(name).couchette", "a document key cut to 2 bytes")
        // The pages themselves are only read when used: the file opens, reading it finds the damage.
        let database = try Database(name: name, config: directory.configuration)
        await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
        try await database.close()
    }

    @Test func anEmptyFileOpensAsANewDatabase() async throws {
        // LMDB writes fresh meta pages into an empty file, as on first open: nothing to crash on
        // and nothing left to recover.
        let directory = try TemporaryDirectory()
        let healthy = try await healthyDatabase(in: directory)
        try truncate(healthy + "/data.mdb", to: 0)
        let database = try directory.open("damaged")
        let collection = try database.defaultCollection()
        #expect(try await collection.count == 0)
        try await collection.save(document: MutableDocument(id: "fresh"))
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()
    }

    /// LMDB leaves pages a transaction allocated and freed again unwritten, so a healthy file can
    /// end before its last page: such a file must open (its missing pages are all free).
    @Test func aHealthyFileThatEndsBeforeItsLastPageOpens() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path + "/short"
        var environment: StorageEnvironment? = try StorageEnvironment(path: folder)
        let table = try #require(environment?.tables.documents)
        var generator = ValueEncodingTests.SeededGenerator(seed: 1)
        var expected: [String: [UInt8]] = [:]
        var foundShort = false
        for _ in 0..<3000 where !foundShort {
            try environment?.write { txn in
                for _ in 0..<Int.random(in: 0..<400, using: &generator) {
                    let key = String(format: "k%08d", Int.random(in: 0..<20_000, using: &generator))
                    if Int.random(in: 0..<3, using: &generator) == 0 {
                        _ = try txn.delete(table, key: Array(key.utf8))
                        expected[key] = nil
                    } else {
                        let value = [UInt8](repeating: UInt8(key.utf8.count), count: Int.random(in: 0..<300, using: &generator))
                        try txn.put(table, key: Array(key.utf8), value: value)
                        expected[key] = value
                    }
                }
                // Range deletions merge pages this transaction just wrote: those become loose.
                if Int.random(in: 0..<5, using: &generator) == 0 {
                    let prefix = String(format: "k%05d", Int.random(in: 0..<20, using: &generator))
                    try txn.deleteAll(table, prefix: Array(prefix.utf8))
                    expected = expected.filter { !$0.key.hasPrefix(prefix) }
                }
            }
            let meta = try #require(try DataFileCheck.newestMeta(folder: folder))
            foundShort = try fileSize(folder + "/data.mdb") < meta.requiredSize ?? 0
        }
        environment?.close()
        environment = nil
        try #require(foundShort, "no transaction left unwritten pages at the end of the file")
        try DataFileCheck.verify(folder: folder)
        let reopened = try StorageEnvironment(path: folder)
        let stored = try reopened.read { txn in
            var stored: [String: [UInt8]] = [:]
            try txn.scan(table, from: [], to: nil) { key, value in
                stored[String(decoding: key, as: UTF8.self)] = Array(value)
                return true
            }
            return stored
        }
        #expect(stored == expected)
        reopened.close()
    }
}
