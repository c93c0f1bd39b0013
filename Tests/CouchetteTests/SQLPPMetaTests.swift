import Foundation
import Testing

@testable import Couchette

/// META(): the whole dictionary in Couchbase Lite's shape and column name, deleted documents
/// visible exactly when the query reads META().deleted or the whole META(), and
/// META().expiration.
@Suite(.tags(.sanitizeAddress)) struct SQLPPMetaTests {
    @Test func wholeMetaDictionary() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            try await SQLPP.save(db, "doc1", #"{"x":1}"#)
            let document = try #require(try await collection.document(id: "doc1"))
            let results = try await db.createQuery("SELECT META() FROM _").execute().allResults()
            #expect(results.first?.keys == ["_"])
            let meta = try #require(results.first?.dictionary(at: 0))
            #expect(Set(meta.keys) == ["id", "sequence", "deleted", "revisionID"])
            #expect(meta.string(forKey: "id") == "doc1")
            #expect(meta.int(forKey: "sequence") == Int(document.sequence))
            #expect(meta.int(forKey: "deleted") == 0)
            #expect(meta.string(forKey: "revisionID") == document.revisionID)

            #expect(try db.createQuery("SELECT META(d) FROM _default AS d").columnNames == ["d"])
            #expect(try db.createQuery("SELECT META() FROM _default").columnNames == ["_default"])
            #expect(try db.createQuery("SELECT META(), META().id, META().deleted FROM _").columnNames == ["_", "id", "deleted"])

            let expiry = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
            try await collection.setDocumentExpiration(id: "doc1", expiration: expiry)
            let expiring = try #require(
                try await db.createQuery("SELECT META() AS m FROM _").execute().allResults().first?.dictionary(forKey: "m"))
            #expect(expiring.int64(forKey: "expiration") == 4_102_444_800_000)
        }
    }

    @Test func readingDeletedQueriesTombstones() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            for id in ["a", "b", "c"] { try await SQLPP.save(db, id, #"{"n":1}"#) }
            try await collection.delete(document: try #require(try await collection.document(id: "b")))

            #expect(try await SQLPP.ids(db, where: "META().deleted") == ["b"])
            #expect(try await SQLPP.ids(db, where: "META().deleted = true") == ["b"])
            #expect(try await SQLPP.ids(db, where: "META().deleted = false") == ["a", "c"])
            #expect(try await SQLPP.ids(db, where: "NOT META().deleted OR n = 1") == ["a", "c"])
            // Reading META().deleted or the whole META() anywhere makes tombstones visible, as in
            // LiteCore (which then reads the collection's deleted documents too).
            #expect(
                try await queryJSON(db, "SELECT META().id AS id, META().deleted AS gone FROM _ ORDER BY META().id")
                    == [#"{"id":"a","gone":false}"#, #"{"id":"b","gone":true}"#, #"{"id":"c","gone":false}"#])
            #expect(
                try await queryJSON(db, "SELECT META().id AS id FROM _ ORDER BY META().id")
                    == [#"{"id":"a"}"#, #"{"id":"c"}"#])
            let metas = try await db.createQuery("SELECT META() AS m FROM _ ORDER BY META().id").execute().allResults()
            #expect(metas.compactMap { $0.dictionary(forKey: "m")?.int(forKey: "deleted") } == [0, 1, 0])
            #expect(
                try await queryJSON(db, "SELECT META().id AS id FROM _ WHERE META().deleted ORDER BY META().deleted, META().id")
                    == [#"{"id":"b"}"#])
            // A joined source's tombstones are visible when its ON clause asks about them.
            let joined = try await queryJSON(
                db,
                """
                SELECT META(x).id AS x, META(y).id AS y FROM _ AS x JOIN _ AS y ON META(y).id = META(x).id OR META(y).deleted
                WHERE META(x).id = 'a' ORDER BY META(y).id
                """)
            #expect(joined == [#"{"x":"a","y":"a"}"#, #"{"x":"a","y":"b"}"#])
        }
    }

    @Test func expirationWithParameters() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            for id in ["soon", "later", "never"] { try await SQLPP.save(db, id, #"{"n":1}"#) }
            try await collection.setDocumentExpiration(id: "soon", expiration: Date(timeIntervalSince1970: 4_000_000_000))
            try await collection.setDocumentExpiration(id: "later", expiration: Date(timeIntervalSince1970: 4_100_000_000))
            let parameters = Parameters().setInt64(4_050_000_000_000, forName: "cutoff")
            #expect(try await SQLPP.ids(db, where: "META().expiration < $cutoff", parameters: parameters) == ["soon"])
            #expect(try await SQLPP.ids(db, where: "META().expiration >= $cutoff", parameters: parameters) == ["later"])
            #expect(try await SQLPP.ids(db, where: "META().expiration IS MISSING") == ["never"])
            #expect(
                try await SQLPP.ids(
                    db, where: "META().expiration BETWEEN $cutoff - 100000000000 AND $cutoff",
                    parameters: parameters) == ["soon"])
            #expect(
                try await queryJSON(db, "SELECT META().expiration FROM _ ORDER BY META().id")
                    == [#"{"expiration":4100000000000}"#, "{}", #"{"expiration":4000000000000}"#])
        }
    }
}
