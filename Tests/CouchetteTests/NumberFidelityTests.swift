import Foundation
import Testing

@testable import Couchette

/// Numbers keep their value and their kind through the store, JSON, the listener and
/// replication, exactly as Apache CouchDB 3.5 keeps them (transcript a18).
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct NumberFidelityTests {
    /// The a18 transcript: what was PUT (raw text) and what CouchDB answered to GET (raw text).
    struct Transcript {
        let sent: String
        let couchDBBody: String

        static func load() throws -> Transcript {
            // The file as a whole is not strict JSON (the capture wrote the parsed bodies of refused
            // requests as Python does: `Infinity`, a lone surrogate), so the raw texts are picked
            // out: the PUT's request (first `body_raw`) and the GET's answer (third; the PUT's
            // answer is the second).
            let text = try String(contentsOfFile: Fixtures.path("couchdb-transcripts/a18-numbers-and-strings.json"), encoding: .utf8)
            let pattern = try NSRegularExpression(pattern: #""body_raw": ("(?:[^"\\]|\\.)*")"#)
            let literals = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                text[Range($0.range(at: 1), in: text)!]
            }
            let raws = try literals.prefix(3).map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8), options: .fragmentsAllowed) as? String)
            }
            let transcript = Transcript(sent: raws[0], couchDBBody: raws[2])
            #expect(transcript.sent.contains("\"e\":2.5E+10") && transcript.couchDBBody.hasPrefix(#"{"_id":"nums""#))
            return transcript
        }

        /// Every `"name":number` of CouchDB's answer, as CouchDB wrote it (`"e":25000000000.0`).
        var couchDBNumbers: [String] {
            let pattern = try! NSRegularExpression(pattern: #""[a-z_]+":-?[0-9][0-9.e+-]*"#)
            return pattern.matches(in: couchDBBody, range: NSRange(couchDBBody.startIndex..., in: couchDBBody)).map {
                String(couchDBBody[Range($0.range, in: couchDBBody)!])
            }
        }
    }

    /// Checks that `text` writes every number as CouchDB did.
    static func expectCouchDBNumbers(
        in text: String, _ transcript: Transcript, _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(transcript.couchDBNumbers.count == 14, sourceLocation: sourceLocation)
        for token in transcript.couchDBNumbers {
            #expect(text.contains(token), "\(context): \(token) missing from \(text)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Values, JSON and the store

    @Test func jsonInAndOutWritesWhatCouchDBWrites() throws {
        let transcript = try Transcript.load()
        let parsed = try JSON.parse(transcript.sent)
        #expect(parsed["big"] == .largeInteger(LargeInteger(text: "123456789012345678901234567890")!))
        #expect(parsed["neg_big"] == .largeInteger(LargeInteger(text: "-98765432109876543210")!))
        #expect(parsed["max_safe"] == .int(9_007_199_254_740_993))
        #expect(parsed["one"] == .double(1))
        #expect(parsed["int"] == .int(42))
        Self.expectCouchDBNumbers(in: JSON.string(from: parsed), transcript, "JSON.string")
        // CouchDB's own output reads back to the same values.
        var couchDB = try JSON.parse(transcript.couchDBBody)
        if case .dictionary(var entries) = couchDB {
            entries["_id"] = nil
            entries["_rev"] = nil
            couchDB = .dictionary(entries)
        }
        #expect(couchDB == parsed)
        // Straight into the binary format and back.
        let binary = try JSON.encodeBinary(transcript.sent)
        #expect(EncodedValue(bytes: binary).decode() == parsed)
        #expect(try ValueEncoder.encode(parsed) == binary)
    }

    @Test func largeIntegersAreCanonicalAndCompareExactly() throws {
        #expect(LargeInteger(text: "9223372036854775807") == nil)  // fits Int64
        #expect(LargeInteger(text: "09223372036854775808") == nil)  // leading zero
        #expect(LargeInteger(text: "-") == nil)
        #expect(LargeInteger(text: "1e30") == nil)
        let twoTo64 = try #require(LargeInteger(text: "18446744073709551616"))
        let next = try #require(LargeInteger(text: "18446744073709551617"))
        let negative = try #require(LargeInteger(text: "-18446744073709551617"))
        #expect(twoTo64.compare(next) < 0 && next.compare(twoTo64) > 0 && twoTo64.compare(twoTo64) == 0)
        let justBelowInt64 = try #require(LargeInteger(text: "-9223372036854775809"))
        #expect(negative.compare(twoTo64) < 0 && negative.compare(justBelowInt64) < 0)
        #expect(twoTo64.compare(18_446_744_073_709_551_616.0) == 0)
        #expect(next.compare(18_446_744_073_709_551_616.0) > 0)  // equal as Doubles, not as numbers
        #expect(LargeInteger(exactly: 1e30)?.text == "1000000000000000019884624838656")
        #expect(LargeInteger(exactly: -0x1p63)?.text == nil)  // Int64.min fits
        #expect(LargeInteger(exactly: 0x1p63)?.text == "9223372036854775808")
        // The binary form: tag, length, digits; damaged digits read as null, never crash.
        let bytes = try ValueEncoder.encode(.largeInteger(next))
        #expect(bytes == [ValueTag.largeInteger, 20] + Array("18446744073709551617".utf8))
        #expect(EncodedValue(bytes: bytes).encodedSize == 22)
        var damaged = bytes
        damaged[5] = UInt8(ascii: "x")
        #expect(EncodedValue(bytes: damaged).decode() == .null)
        #expect(EncodedValue(bytes: Array(bytes.prefix(10))).decode() == .null)
    }

    @Test func documentsSaveAndReadNumbersExactly() async throws {
        let transcript = try Transcript.load()
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: try MutableDocument(id: "nums", json: transcript.sent))
            let read = try #require(try await collection.document(id: "nums"))
            Self.expectCouchDBNumbers(in: read.toJSON(), transcript, "Document.toJSON")
            Self.expectCouchDBNumbers(in: read.toMutable().toJSON(), transcript, "MutableDocument.toJSON")
            // Typed getters: exact Decimal, nearest Double, clamped Int64.
            #expect(read.value(forKey: "big") as? Decimal == Decimal(string: "123456789012345678901234567890"))
            #expect(read.double(forKey: "big") == 1.2345678901234568e29)
            #expect(read.int64(forKey: "big") == .max)
            #expect(read.int64(forKey: "neg_big") == .min)
            #expect(read.value(forKey: "one") as? Double == 1.0)
            #expect(read.value(forKey: "int") as? Int == 42)
            #expect(read.number(forKey: "big")?.description == "123456789012345678901234567890")
            // Edited through the plain dictionary and saved again: still exact, still doubles.
            let copy = MutableDocument(id: "copy", data: read.toDictionary())
            try await collection.save(document: copy)
            let reread = try #require(try await collection.document(id: "copy"))
            Self.expectCouchDBNumbers(in: reread.toJSON(), transcript, "saved from toDictionary()")
        }
    }

    @Test func bodiesDifferingOnlyInNumberKindGetDifferentRevisions() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: try MutableDocument(id: "int", json: #"{"x":1}"#))
            try await collection.save(document: try MutableDocument(id: "double", json: #"{"x":1.0}"#))
            try await collection.save(document: try MutableDocument(id: "again", json: #"{ "x" : 1 }"#))
            let int = try #require(try await collection.document(id: "int")?.revisionID)
            let double = try #require(try await collection.document(id: "double")?.revisionID)
            let again = try #require(try await collection.document(id: "again")?.revisionID)
            // As in CouchDB (a17): {"x":1} and {"x":1.0} are different bodies; whitespace is not.
            #expect(int != double)
            #expect(int == again)
        }
    }

    @Test func queriesCompareLargeIntegersExactly() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // 2^64 and 2^64 + 1 are the same Double; as integers they differ.
            for (id, json) in [
                ("a", #"{"v":18446744073709551617}"#), ("b", #"{"v":18446744073709551616}"#),
                ("c", #"{"v":1.8446744073709552e19}"#), ("d", #"{"v":-98765432109876543210}"#), ("e", #"{"v":5}"#),
            ] {
                try await collection.save(document: try MutableDocument(id: id, json: json))
            }
            let rows = try await queryJSON(database, "SELECT meta().id AS id, v FROM _ ORDER BY v, meta().id")
            #expect(
                rows == [
                    #"{"id":"d","v":-98765432109876543210}"#, #"{"id":"e","v":5}"#,
                    #"{"id":"b","v":18446744073709551616}"#, #"{"id":"c","v":1.8446744073709552e+19}"#,
                    #"{"id":"a","v":18446744073709551617}"#,
                ])
            let above = try await queryJSON(database, "SELECT meta().id AS id FROM _ WHERE v > 1e19 ORDER BY meta().id")
            #expect(above == [#"{"id":"a"}"#, #"{"id":"b"}"#, #"{"id":"c"}"#])
            // Large literals are exact too.
            #expect(try await queryJSON(database, "SELECT meta().id AS id FROM _ WHERE v = 18446744073709551617") == [#"{"id":"a"}"#])
            #expect(try await queryJSON(database, "SELECT meta().id AS id FROM _ WHERE v = -98765432109876543210") == [#"{"id":"d"}"#])
            #expect(
                try await queryJSON(database, "SELECT -9223372036854775808 AS m, ABS(v) AS a FROM _ WHERE meta().id = 'd'")
                    == [#"{"m":-9223372036854775808,"a":98765432109876543210}"#])
            // An index keys them by their nearest Double; the answers stay exact.
            try await collection.createIndex(withName: "by_v", config: ValueIndexConfiguration(["v"]))
            #expect(try await queryJSON(database, "SELECT meta().id AS id, v FROM _ ORDER BY v, meta().id") == rows)
            let indexed = try await queryJSON(database, "SELECT meta().id AS id FROM _ WHERE v > 18446744073709551616.0 ORDER BY meta().id")
            #expect(indexed == [#"{"id":"a"}"#])
        }
    }

    // MARK: - Listener

    @Test func listenerAnswersNumbersAsCouchDBDoes() async throws {
        let transcript = try Transcript.load()
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await withListener([collection]) { listener, _ in
                let db = listener.urls[0].absoluteString
                let put = try await httpRequest("PUT", db + "/nums", body: transcript.sent)
                #expect(put.status == 201)
                for (what, path) in [
                    ("GET", "/nums"), ("_all_docs", "/_all_docs?include_docs=true"), ("_changes", "/_changes?include_docs=true"),
                ] {
                    let reply = try await httpRequest("GET", db + path)
                    #expect(reply.status == 200)
                    Self.expectCouchDBNumbers(in: reply.text, transcript, what)
                }
                let bulk = try await httpRequest("POST", db + "/_bulk_get?revs=true", body: #"{"docs": [{"id": "nums"}]}"#)
                Self.expectCouchDBNumbers(in: bulk.text, transcript, "_bulk_get")
                // What CouchDB refuses, Couchette refuses: a number beyond Double's range, NaN.
                #expect(try await httpRequest("PUT", db + "/overflow", body: #"{"v":1e400}"#).status == 400)
                #expect(try await httpRequest("PUT", db + "/nan", body: #"{"v":NaN}"#).status == 400)
            }
        }
    }

    // MARK: - Replication

    @Test(arguments: Transport.allCases)
    func replicationKeepsNumbersBothWays(transport: Transport) async throws {
        let transcript = try Transcript.load()
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            try await local.defaultCollection().save(document: try MutableDocument(id: "nums", json: transcript.sent))
            let push = try Replicator(config: try makeConfig(local, endpoint, .push))
            #expect(await runToCompletion(push).last?.error == nil)
            let pushed = try #require(try await remote.defaultCollection().document(id: "nums"))
            Self.expectCouchDBNumbers(in: pushed.toJSON(), transcript, "pushed")
            let localRevision = try await local.defaultCollection().document(id: "nums")?.revisionID
            #expect(pushed.revisionID == localRevision)

            // Edited on the other side (a property added) and pulled back.
            let edited = pushed.toMutable().setString("yes", forKey: "edited")
            try await remote.defaultCollection().save(document: edited)
            let pull = try Replicator(config: try makeConfig(local, endpoint, .pull))
            #expect(await runToCompletion(pull).last?.error == nil)
            let pulled = try #require(try await local.defaultCollection().document(id: "nums"))
            #expect(pulled.string(forKey: "edited") == "yes")
            Self.expectCouchDBNumbers(in: pulled.toJSON(), transcript, "pulled")
        }
    }
}
