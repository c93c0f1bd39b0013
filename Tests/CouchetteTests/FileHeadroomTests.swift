import Foundation
import Testing

@testable import Couchette

/// Zeros written ahead of LMDB's last page so that single saves write inside `data.mdb` instead
/// of growing it (a growing file makes every `fdatasync` write its inode too).
@Suite struct FileHeadroomTests {
    private static func fileSize(_ database: Database) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: database.path + "data.mdb")
        return try #require((attributes[.size] as? NSNumber)?.intValue)
    }

    /// Saving one document at a time, the file grows only every few dozen saves, in steps, and
    /// the zero-filled tail reopens, reads and checks clean.
    @Test func singleSavesWriteInsideTheFile() async throws {
        let directory = try TemporaryDirectory()
        var database: Database? = try directory.open("headroom")
        let items = try #require(try await database?.createCollection(name: "items"))
        let environment = try #require(database?.core.environment)
        let body = String(repeating: "x", count: 700)
        var size = try Self.fileSize(#require(database))
        var growths = 0
        for number in 0..<300 {
            try await items.save(document: MutableDocument(id: "doc-\(number)").setString(body, forKey: "body"))
            let now = try Self.fileSize(#require(database))
            if now > size { growths += 1 }
            size = now
            #expect(size >= environment.usedBytes)
        }
        // Without headroom most of these saves grow the file (each adds about a page).
        let used = environment.usedBytes
        #expect(used > 300 * 700)
        #expect(growths <= 12, "the file grew at \(growths) of 300 saves")
        #expect(size > used)
        #expect(size <= used + FileHeadroom.step(usedEnd: used) + FileHeadroom.minimumStep)
        try await database?.close()
        database = nil

        let reopened = try directory.open("headroom")
        let again = try #require(try reopened.collection(name: "items"))
        #expect(try await again.count == 300)
        #expect(try await again.document(id: "doc-299")?.string(forKey: "body") == body)
        try await reopened.performMaintenance(type: .integrityCheck)
        try await again.save(document: MutableDocument(id: "after-reopen"))
        try await reopened.close()
    }

    /// After a large commit (a bulk insert) no zeros are written ahead: they would double the
    /// bytes written for space such commits fill anyway.
    @Test func largeCommitsGetNoHeadroom() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let environment = database.core.environment
            let body = String(repeating: "y", count: 500)
            for round in 0..<3 {
                try await database.inBatch { batch in
                    for number in 0..<500 {
                        try batch.save(document: MutableDocument(id: "r\(round)-\(number)").setString(body, forKey: "body"), in: collection)
                    }
                }
            }
            try await collection.save(document: MutableDocument(id: "single"))
            let size = try Self.fileSize(database)
            #expect(size < environment.usedBytes + FileHeadroom.minimumStep)
        }
    }

    /// The decision itself: no headroom before the growth between transactions is known, a
    /// step of a sixteenth of the used size (64 KiB to 1 MiB), never past the map.
    @Test func headroomStepsAndLimits() {
        #expect(FileHeadroom.step(usedEnd: 4096) == 64 << 10)
        #expect(FileHeadroom.step(usedEnd: 8 << 20) == 512 << 10)
        #expect(FileHeadroom.step(usedEnd: 1 << 30) == 1 << 20)

        var headroom = FileHeadroom()
        #expect(headroom.extensionNeeded(usedEnd: 40_960, mapSize: 1 << 26) { 40_960 } == nil)  // first transaction
        #expect(headroom.extensionNeeded(usedEnd: 45_056, mapSize: 1 << 26) { 45_056 } == 45_056..<131_072)
        headroom.extended(to: 131_072)
        var asked = false
        let sizeOfFile = {
            asked = true
            return 131_072
        }
        #expect(headroom.extensionNeeded(usedEnd: 49_152, mapSize: 1 << 26, fileSize: sizeOfFile) == nil)
        #expect(!asked)  // the known size was enough: no fstat

        var large = FileHeadroom()
        _ = large.extensionNeeded(usedEnd: 40_960, mapSize: 1 << 26) { 40_960 }
        #expect(large.extensionNeeded(usedEnd: 40_960 + 200 << 10, mapSize: 1 << 26) { 40_960 + 200 << 10 } == nil)

        var capped = FileHeadroom()
        _ = capped.extensionNeeded(usedEnd: 40_960, mapSize: 65_536) { 40_960 }
        #expect(capped.extensionNeeded(usedEnd: 45_056, mapSize: 65_536) { 45_056 } == 45_056..<65_536)
    }
}
