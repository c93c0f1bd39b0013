import Foundation
import Testing

@testable import Couchette

/// ``MangoSelector``: CouchDB's selector operators, its collation and its errors.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct MangoSelectorTests {
    static let document = try! JSON.parse(
        """
        {"_id": "d1", "_rev": "1-a", "type": "task", "n": 7, "ratio": 2.5, "done": false, "none": null,
         "tags": ["red", "blue"], "scores": [3, 8, 12], "owner": {"name": "Ann", "address": {"city": "Lyon"}},
         "items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 0}], "a.b": "dotted", "big": 123456789012345678901234567890,
         "title": "The Quick Fox", "empty": []}
        """)

    static func matches(_ selector: String, _ document: Value = document) throws -> Bool {
        try MangoSelector(JSON.parse(selector)).matches(document)
    }

    /// Each selector once matching and once not matching the document above.
    @Test(arguments: [
        // implicit $eq / $and, dotted and nested paths
        (#"{"type": "task"}"#, #"{"type": "note"}"#),
        (#"{"type": "task", "n": 7}"#, #"{"type": "task", "n": 8}"#),
        (#"{"owner.name": "Ann"}"#, #"{"owner.name": "Bob"}"#),
        (#"{"owner": {"address": {"city": "Lyon"}}}"#, #"{"owner": {"address": {"city": "Paris"}}}"#),
        (#"{"owner.address.city": {"$eq": "Lyon"}}"#, #"{"owner.address.city": {"$eq": "lyon"}}"#),
        (#"{"a\\.b": "dotted"}"#, #"{"a.b": "dotted"}"#),
        (#"{"tags.1": "blue"}"#, #"{"tags.2": "blue"}"#),
        (#"{"_id": "d1"}"#, #"{"_id": "d2"}"#),
        // comparisons, numbers by value whatever their kind
        (#"{"n": {"$eq": 7.0}}"#, #"{"n": {"$eq": 7.5}}"#),
        (#"{"n": {"$ne": 8}}"#, #"{"n": {"$ne": 7}}"#),
        (#"{"n": {"$gt": 6}}"#, #"{"n": {"$gt": 7}}"#),
        (#"{"n": {"$gte": 7}}"#, #"{"n": {"$gte": 7.5}}"#),
        (#"{"n": {"$lt": 7.5}}"#, #"{"n": {"$lt": 7}}"#),
        (#"{"n": {"$lte": 7}}"#, #"{"n": {"$lte": 6}}"#),
        (#"{"n": {"$gt": 5, "$lt": 10}}"#, #"{"n": {"$gt": 7, "$lt": 10}}"#),
        (#"{"big": {"$gt": 123456789012345678901234567889}}"#, #"{"big": {"$gt": 123456789012345678901234567890}}"#),
        // $in $nin: an array field matches when an element does
        (#"{"type": {"$in": ["note", "task"]}}"#, #"{"type": {"$in": ["note"]}}"#),
        (#"{"tags": {"$in": ["green", "blue"]}}"#, #"{"tags": {"$in": ["green"]}}"#),
        (#"{"type": {"$nin": ["note"]}}"#, #"{"type": {"$nin": ["note", "task"]}}"#),
        (#"{"tags": {"$nin": ["green"]}}"#, #"{"tags": {"$nin": ["red"]}}"#),
        // $exists $type
        (#"{"none": {"$exists": true}}"#, #"{"missing": {"$exists": true}}"#),
        (#"{"missing": {"$exists": false}}"#, #"{"none": {"$exists": false}}"#),
        (#"{"none": {"$type": "null"}}"#, #"{"done": {"$type": "null"}}"#),
        (#"{"done": {"$type": "boolean"}}"#, #"{"n": {"$type": "boolean"}}"#),
        (#"{"big": {"$type": "number"}}"#, #"{"type": {"$type": "number"}}"#),
        (#"{"type": {"$type": "string"}}"#, #"{"tags": {"$type": "string"}}"#),
        (#"{"tags": {"$type": "array"}}"#, #"{"owner": {"$type": "array"}}"#),
        (#"{"owner": {"$type": "object"}}"#, #"{"items": {"$type": "object"}}"#),
        // combinations
        (#"{"$and": [{"type": "task"}, {"n": 7}]}"#, #"{"$and": [{"type": "task"}, {"n": 8}]}"#),
        (#"{"$or": [{"type": "note"}, {"n": 7}]}"#, #"{"$or": [{"type": "note"}, {"n": 8}]}"#),
        (#"{"$nor": [{"type": "note"}, {"n": 8}]}"#, #"{"$nor": [{"type": "note"}, {"n": 7}]}"#),
        (#"{"$not": {"type": "note"}}"#, #"{"$not": {"type": "task"}}"#),
        (#"{"n": {"$not": {"$gt": 10}}}"#, #"{"n": {"$not": {"$gt": 5}}}"#),
        (#"{"n": {"$or": [{"$lt": 0}, {"$eq": 7}]}}"#, #"{"n": {"$or": [{"$lt": 0}, 8]}}"#),
        (#"{"missing": {"$not": {"$eq": 1}}}"#, #"{"missing": {"$ne": 1}}"#),  // $ne needs the field
        // arrays
        (#"{"tags": {"$all": ["blue", "red"]}}"#, #"{"tags": {"$all": ["blue", "green"]}}"#),
        (#"{"tags": {"$size": 2}}"#, #"{"tags": {"$size": 3}}"#),
        (#"{"empty": {"$size": 0}}"#, #"{"type": {"$size": 4}}"#),
        (#"{"scores": {"$elemMatch": {"$gt": 10}}}"#, #"{"scores": {"$elemMatch": {"$gt": 12}}}"#),
        (#"{"items": {"$elemMatch": {"sku": "b", "qty": 0}}}"#, #"{"items": {"$elemMatch": {"sku": "b", "qty": 2}}}"#),
        (#"{"scores": {"$allMatch": {"$gt": 2}}}"#, #"{"scores": {"$allMatch": {"$gt": 3}}}"#),
        (#"{"items": {"$allMatch": {"qty": {"$gte": 0}}}}"#, #"{"empty": {"$allMatch": {"$gt": 0}}}"#),
        // $mod $regex
        (#"{"n": {"$mod": [3, 1]}}"#, #"{"n": {"$mod": [3, 2]}}"#),
        (#"{"title": {"$regex": "Quick"}}"#, #"{"title": {"$regex": "^Quick"}}"#),
        (#"{"title": {"$regex": "(?i)^the quick"}}"#, #"{"n": {"$regex": "7"}}"#),
    ])
    func operatorMatchesAndMisses(matching: String, missing: String) throws {
        #expect(try Self.matches(matching), "\(matching)")
        #expect(try !Self.matches(missing), "\(missing)")
    }

    @Test func typesFollowCouchDBCollation() throws {
        // null < false < true < numbers < strings < arrays < objects
        let ordered = try [
            "null", "false", "true", "-5", "0", "1.5", "2", "123456789012345678901234567890", "\"\"", "\"a\"", "\"b\"",
            "\"B\"", "[]", "[1]", "[1,2]", "[2]", "{}", "{\"a\":1}", "{\"a\":2}", "{\"b\":1}",
        ].map(JSON.parse)
        for (index, value) in ordered.enumerated() {
            for (other, later) in ordered.enumerated() {
                let expected = index < other ? -1 : (index == other ? 0 : 1)
                #expect(CouchCollation.compare(value, later) == expected, "\(JSON.string(from: value)) vs \(JSON.string(from: later))")
            }
        }
        #expect(CouchCollation.compare(.int(1), .double(1)) == 0)
        // $gt across types follows the collation: every string is above every number.
        let strings: Value = .dictionary(["v": .string("abc")])
        #expect(try Self.matches(#"{"v": {"$gt": 1000}}"#, strings))
        #expect(try !Self.matches(#"{"v": {"$lt": 1000}}"#, strings))
        #expect(try Self.matches(#"{"v": {"$lt": [0]}}"#, strings))
    }

    @Test func deletedDocumentsMatchAsTombstones() throws {
        let tombstone = MangoSelector.document(id: "c", revisionID: "2-x", deleted: true, body: .dictionary(["type": .string("x")]))
        #expect(tombstone == .dictionary(["_id": .string("c"), "_rev": .string("2-x"), "_deleted": .bool(true)]))
        #expect(try Self.matches(#"{"_deleted": true}"#, tombstone))
        #expect(try !Self.matches(#"{"type": "x"}"#, tombstone))
        let live = MangoSelector.document(id: "a", revisionID: "1-y", deleted: false, body: .dictionary(["type": .string("x")]))
        #expect(try Self.matches(#"{"type": "x"}"#, live))
        #expect(try !Self.matches(#"{"_deleted": true}"#, live))
    }

    @Test(arguments: [
        ("null", "expected a JSON object"),
        ("[]", "expected a JSON object"),
        (#"{"a": {"$foo": 1}}"#, "invalid operator $foo"),
        (#"{"a": {"$gt": 1, "b": 2}}"#, "mixed"),
        (#"{"a": {"$in": 1}}"#, "$in needs an array"),
        (#"{"a": {"$exists": "yes"}}"#, "$exists"),
        (#"{"a": {"$type": "integer"}}"#, "$type"),
        (#"{"a": {"$size": 1.5}}"#, "$size"),
        (#"{"a": {"$mod": [0, 1]}}"#, "$mod"),
        (#"{"a": {"$regex": "("}}"#, "$regex"),
        (#"{"$and": {"a": 1}}"#, "$and needs an array"),
        (#"{"$or": [1]}"#, "expected a JSON object"),
        (#"{"a..b": 1}"#, "empty part"),
    ])
    func invalidSelectorsAreRefusedNamingTheProblem(selector: String, problem: String) throws {
        let error = try #require(throws: CouchetteError.self) { _ = try MangoSelector(JSON.parse(selector)) }
        #expect(error.code == .invalidParameter)
        #expect(error.message.hasPrefix("Selector error: "))
        #expect(error.message.contains(problem), "\(error.message)")
    }

    @Test func nestingIsBounded() throws {
        var deep = #"{"a": 1}"#
        for _ in 0..<70 { deep = #"{"$not": \#(deep)}"# }
        let error = try #require(throws: CouchetteError.self) { _ = try MangoSelector(JSON.parse(deep)) }
        #expect(error.message.contains("nested deeper than \(MangoSelector.maximumDepth) levels"))
        var allowed = #"{"a": 1}"#
        for _ in 0..<62 { allowed = #"{"$not": \#(allowed)}"# }  // an even number of negations, one level to spare
        #expect(try MangoSelector(JSON.parse(allowed)).matches(.dictionary(["a": .int(1)])))
    }
}
