import Foundation
import Testing

@testable import Couchette

/// A `[String]` or `[Int]` set on a mutable container is kept as that array
/// (`MutableSlot.strings`, `.integers`) and written straight into the body: every form of the
/// document must be what the same array of values gives.
@Suite(.tags(.sanitizeAddress)) struct TypedArraySlotTests {
    @Test func aStringArrayIsKeptAsGiven() throws {
        let document = MutableDocument(id: "d").setValue(["a", "b"], forKey: "tags")
        let slot = try #require(document.root.changedEntries.first?.slot)
        guard case .strings(let kept) = slot else {
            Issue.record("setValue([String]) stored \(slot), not the strings")
            return
        }
        #expect(kept == ["a", "b"])
        let numbers = MutableArrayObject().addValue([1, -70_000, Int.max])
        guard case .integers(let integers) = numbers.slots[0] else {
            Issue.record("addValue([Int]) stored \(numbers.slots[0]), not the integers")
            return
        }
        #expect(integers == [1, -70_000, Int.max])
    }

    @Test(arguments: [[String](), ["home"], ["é", "", String(repeating: "x", count: 300), "z"]])
    func stringsEncodeAsTheirValues(_ texts: [String]) throws {
        let typed = MutableDocument(id: "d").setValue(texts, forKey: "tags").setInt(1, forKey: "n")
        let values: Value = .dictionary(["tags": .array(texts.map(Value.string)), "n": .int(1)])
        #expect(try typed.encodeBody() == ValueEncoder.encode(values))
        let fresh = MutableDocument(id: "d").setValue(texts, forKey: "tags")
        #expect(fresh.toDictionary()["tags"] as? [Any] != nil)
        #expect(fresh.toDictionary()["tags"] as? [String] == texts)
        #expect((fresh.array(forKey: "tags")?.toArray() as? [String]) == texts)
    }

    @Test func integersEncodeAsTheirValues() throws {
        let numbers = [0, 127, -129, 70_000, Int.min, Int.max]
        let typed = MutableDocument(id: "d").setValue(numbers, forKey: "ns")
        #expect(try typed.encodeBody() == ValueEncoder.encode(.dictionary(["ns": .array(numbers.map { .int(Int64($0)) })])))
        let fresh = MutableDocument(id: "d").setValue(numbers, forKey: "ns")
        #expect(fresh.toDictionary()["ns"] as? [Int] == numbers)
        #expect(fresh.value(forKey: "ns") is MutableArrayObject)
    }

    @Test func laterChangesToTheCallersArrayDoNotReachTheDocument() throws {
        var tags = ["home"]
        let document = MutableDocument(id: "d").setValue(tags, forKey: "tags")
        tags.append("urgent")
        #expect(document.toDictionary()["tags"] as? [String] == ["home"])
    }

    @Test func editsThroughTheArrayReadBackAreSaved() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "d").setValue(["home"], forKey: "tags").setValue([1, 2], forKey: "ns")
            document.array(forKey: "tags")?.addString("urgent")
            try document.array(forKey: "ns")?.setValue(5, at: 0)
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "d"))
            #expect(stored.array(forKey: "tags")?.toArray() as? [String] == ["home", "urgent"])
            #expect(stored.array(forKey: "ns")?.toArray() as? [Int] == [5, 2])
        }
    }

    @Test func aStringArrayInPlaceOfAStoredOneOfTheSameSizeIsPatched() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setValue(["ab", "cd"], forKey: "tags").setInt(1, forKey: "n"))
            let read = try #require(try await collection.document(id: "d")).toMutable()
            read.setValue(["xy", "zw"], forKey: "tags")
            let patched = try #require(read.root.patchedBody)
            #expect(patched == (try ValueEncoder.encode(.dictionary(["tags": .array([.string("xy"), .string("zw")]), "n": .int(1)]))))
        }
    }
}
