import Foundation
import Testing

@testable import Couchette

/// How mutable documents become bytes: untouched stored values are copied as they are, cycles and
/// unstorable values are reported, snapshots never lose the storable part.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct MutableEncodingTests {
    @Test func untouchedStoredValuesSurviveAnEditElsewhere() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let original = try MutableDocument(id: "d", json: #"{"nested":{"list":[1,{"deep":true}],"s":"x"},"n":1}"#)
            try await collection.save(document: original)
            let stored = try #require(try await collection.document(id: "d"))
            let edit = stored.toMutable().setInt(2, forKey: "n")
            try await collection.save(document: edit)
            let reread = try #require(try await collection.document(id: "d"))
            #expect(reread.toJSON() == #"{"n":2,"nested":{"list":[1,{"deep":true}],"s":"x"}}"#)
            // Editing deep inside a value read from storage lands in the saved document.
            let deepEdit = reread.toMutable()
            deepEdit.dictionary(forKey: "nested")?.array(forKey: "list")?.dictionary(at: 1)?.setBoolean(false, forKey: "deep")
            try await collection.save(document: deepEdit)
            #expect(try await collection.document(id: "d")?["nested"]["list"][1]["deep"].bool == false)
        }
    }

    @Test func encodingAStoredDocumentAgainGivesTheSameBytes() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: try MutableDocument(id: "d", json: #"{"b":[1,2.5,"three"],"a":{"z":null,"y":false}}"#))
            let stored = try #require(try await collection.document(id: "d"))
            #expect(try stored.toMutable().encodeBody() == stored.body)
            #expect(try ValueEncoder.encode(stored.root.decode()) == stored.body)
        }
    }

    /// Plain values set on a stored dictionary stay beside its stored form until it is read: the
    /// save copies the other entries as they are, and gives exactly the bytes of a full encoding.
    @Test func editsOfAStoredDocumentEncodeLikeAFullEncoding() throws {
        let json = #"{"b":[1,2.5,"three"],"d":{"z":null},"f":"x"}"#
        let stored = Document(id: "d", revisionID: nil, sequence: 0, body: try JSON.encodeBinary(json))
        let edit = stored.toMutable()
            .setInt(2, forKey: "b").setString("first", forKey: "a").setBoolean(true, forKey: "e").setDouble(1.5, forKey: "z")
            .setInt(3, forKey: "b")  // the last edit of a key wins
        guard case .dictionary(var expected) = try JSON.parse(json) else { Issue.record("not an object"); return }
        expected["b"] = .int(3)
        expected["a"] = .string("first")
        expected["e"] = .bool(true)
        expected["z"] = .double(1.5)
        #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(expected)))
        #expect(try edit.toMutable().encodeBody() == edit.encodeBody())  // a copy keeps the edits
        #expect(edit.count == 6)
        #expect(edit.keys == ["a", "b", "d", "e", "f", "z"])
        #expect(edit.int(forKey: "b") == 3)
        #expect(try edit.removeValue(forKey: "d").encodeBody() == ValueEncoder.encode(.dictionary(expected.filter { $0.key != "d" })))
        let unstorable = stored.toMutable().setDouble(.nan, forKey: "bad")
        #expect(throws: CouchetteError.self) { try unstorable.encodeBody() }
        #expect(try stored.toMutable().encodeBody() == stored.body)
    }

    @Test func sameSizeEditsAreWrittenOverTheStoredBytes() throws {
        let json = #"{"count":41,"flag":false,"name":"abc","nested":{"n":1},"ratio":0.5,"wide":300}"#
        let stored = Document(id: "d", revisionID: nil, sequence: 0, body: try JSON.encodeBinary(json))
        guard case .dictionary(let original) = try JSON.parse(json) else { Issue.record("not an object"); return }
        func expectFullEncoding(_ edit: MutableDocument, _ changes: [String: Value], patched: Bool) throws {
            #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(original.merging(changes) { $1 })))
            #expect((edit.root.patchedBody != nil) == patched)
        }
        // Same encoded sizes: patched in place.
        try expectFullEncoding(
            stored.toMutable().setInt(42, forKey: "count").setBoolean(true, forKey: "flag").setString("xyz", forKey: "name")
                .setDouble(2.25, forKey: "ratio").setInt(-301, forKey: "wide"),
            ["count": .int(42), "flag": .bool(true), "name": .string("xyz"), "ratio": .double(2.25), "wide": .int(-301)],
            patched: true)
        // A wider integer, a longer string, a new key: the full encoding.
        try expectFullEncoding(stored.toMutable().setInt(128, forKey: "count"), ["count": .int(128)], patched: false)
        try expectFullEncoding(stored.toMutable().setString("abcd", forKey: "name"), ["name": .string("abcd")], patched: false)
        try expectFullEncoding(stored.toMutable().setInt(1, forKey: "added"), ["added": .int(1)], patched: false)
        // A value that cannot be stored is still reported, naming its key.
        let bad = stored.toMutable().setDouble(.infinity, forKey: "ratio")
        #expect(bad.root.patchedBody == nil)
        let error = try #require(throws: CouchetteError.self) { try bad.encodeBody() }
        #expect(error.message.contains("ratio"))
    }

    @Test func aContainerCannotContainItself() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let loop = MutableDictionaryObject().setString("v", forKey: "k")
            loop.setDictionary(loop, forKey: "self")
            let other = MutableArrayObject()
            let holder = MutableDictionaryObject().setArray(other, forKey: "list")
            other.addDictionary(holder)
            #expect(loop.toDictionary()["k"] as? String == "v")  // no endless recursion
            let document = MutableDocument(id: "cycle").setDictionary(loop, forKey: "loop")
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(document: document) }
            #expect(message?.contains("loop.self") == true, "\(message ?? "")")
            #expect(message?.contains("itself") == true, "\(message ?? "")")
            let indirect = MutableDocument(id: "indirect").setDictionary(holder, forKey: "h")
            await expectCouchetteError(.invalidParameter) { try await collection.save(document: indirect) }
        }
    }

    @Test func snapshotsKeepEveryStorableValue() {
        let mutable = MutableDocument(id: "s").setString("kept", forKey: "a").setDouble(.nan, forKey: "bad")
        let snapshot = Document(mutable)
        #expect(snapshot.string(forKey: "a") == "kept")
        #expect(snapshot.value(forKey: "bad") is NSNull)
    }
}

@Suite struct DateValidationTests {
    @Test(arguments: ["2023-02-29", "2024-02-30", "2023-04-31", "1900-02-29T00:00:00Z"])
    func impossibleDaysAreNotDates(text: String) {
        #expect(ISO8601.date(from: text) == nil)
    }

    @Test(arguments: ["2024-02-29", "2000-02-29T12:00:00Z", "2023-04-30", "2023-12-31T23:59:59.999Z"])
    func realDaysAreDates(text: String) {
        #expect(ISO8601.date(from: text) != nil)
    }
}
