import Foundation
import Testing

@testable import Couchette

/// Document, MutableDocument, their nested containers and fragments: getters, Couchbase Lite
/// coercions, editing, copying and what a save refuses.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct DocumentTests {
    /// One property of every kind, used by the getter and coercion tests.
    static func sample() -> MutableDocument {
        MutableDocument(id: "sample")
            .setString("hello", forKey: "string")
            .setString("42", forKey: "numericString")
            .setString("", forKey: "emptyString")
            .setString("false", forKey: "falseString")
            .setInt(7, forKey: "int")
            .setInt(0, forKey: "zero")
            .setInt(-1, forKey: "negative")
            .setInt64(.max, forKey: "int64Max")
            .setInt64(.min, forKey: "int64Min")
            .setDouble(3.9, forKey: "double")
            .setDouble(-3.9, forKey: "negativeDouble")
            .setDouble(0.5, forKey: "half")
            .setDouble(0.0, forKey: "doubleZero")
            .setDouble(1e30, forKey: "hugeDouble")
            .setDouble(-1e30, forKey: "hugeNegativeDouble")
            .setFloat(1.25, forKey: "float")
            .setBoolean(true, forKey: "true")
            .setBoolean(false, forKey: "false")
            .setValue(nil, forKey: "null")
            .setArray(MutableArrayObject(data: [1, "two", 3.5]), forKey: "array")
            .setDictionary(MutableDictionaryObject(data: ["k": "v"]), forKey: "dictionary")
    }

    /// The three forms a document is read in: mutable, snapshot, and stored-then-read.
    static func forms(of document: MutableDocument) async throws -> [(String, any DictionaryProtocol)] {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: document.id))
            return [("mutable", document), ("snapshot", Document(document)), ("stored", stored)]
        }
    }

    // MARK: - Getters and coercions

    @Test func gettersReturnStoredValues() async throws {
        for (form, document) in try await Self.forms(of: Self.sample()) {
            #expect(document.count == 21, "\(form)")
            #expect(document.string(forKey: "string") == "hello", "\(form)")
            #expect(document.int(forKey: "int") == 7, "\(form)")
            #expect(document.int64(forKey: "int64Max") == .max, "\(form)")
            #expect(document.int64(forKey: "int64Min") == .min, "\(form)")
            #expect(document.double(forKey: "double") == 3.9, "\(form)")
            #expect(document.float(forKey: "float") == 1.25, "\(form)")
            #expect(document.bool(forKey: "true") == true, "\(form)")
            #expect(document.boolean(forKey: "false") == false, "\(form)")
            #expect(document.value(forKey: "null") is NSNull, "\(form)")
            #expect(document.value(forKey: "int") as? Int == 7, "\(form)")
            #expect(document.value(forKey: "double") as? Double == 3.9, "\(form)")
            #expect(document.value(forKey: "true") as? Bool == true, "\(form)")
            #expect(document.value(forKey: "missing") == nil, "\(form)")
            #expect(document.contains(key: "null"), "\(form)")
            #expect(!document.contains(key: "missing"), "\(form)")
            #expect(document.number(forKey: "int") == NSNumber(value: 7), "\(form)")
            #expect(document.number(forKey: "double") == NSNumber(value: 3.9), "\(form)")
            #expect(document.number(forKey: "string") == nil, "\(form)")
            #expect(document.number(forKey: "missing") == nil, "\(form)")
        }
    }

    @Test func keysAreSortedByUTF8Bytes() async throws {
        let document = MutableDocument(id: "k").setInt(1, forKey: "é").setInt(2, forKey: "z")
            .setInt(3, forKey: "A").setInt(4, forKey: "😀").setInt(5, forKey: "")
        for (form, read) in try await Self.forms(of: document) {
            #expect(read.keys == ["", "A", "z", "é", "😀"], "\(form)")
            #expect(read.count == 5, "\(form)")
        }
    }

    @Test func intCoercions() async throws {
        for (form, document) in try await Self.forms(of: Self.sample()) {
            #expect(document.int(forKey: "numericString") == 0, "\(form)")  // a string is not a number
            #expect(document.int(forKey: "string") == 0, "\(form)")
            #expect(document.int(forKey: "double") == 3, "\(form)")  // truncated
            #expect(document.int(forKey: "negativeDouble") == -3, "\(form)")
            #expect(document.int64(forKey: "hugeDouble") == .max, "\(form)")  // clamped
            #expect(document.int64(forKey: "hugeNegativeDouble") == .min, "\(form)")
            #expect(document.int(forKey: "true") == 1, "\(form)")
            #expect(document.int(forKey: "false") == 0, "\(form)")
            #expect(document.int(forKey: "null") == 0, "\(form)")
            #expect(document.int(forKey: "missing") == 0, "\(form)")
            #expect(document.int(forKey: "array") == 0, "\(form)")
            #expect(document.int(forKey: "dictionary") == 0, "\(form)")
        }
    }

    @Test func doubleCoercions() async throws {
        for (form, document) in try await Self.forms(of: Self.sample()) {
            #expect(document.double(forKey: "int") == 7, "\(form)")
            #expect(document.double(forKey: "int64Max") == 9.223372036854775807e18, "\(form)")
            #expect(document.double(forKey: "true") == 1, "\(form)")
            #expect(document.double(forKey: "false") == 0, "\(form)")
            #expect(document.double(forKey: "numericString") == 0, "\(form)")
            #expect(document.double(forKey: "null") == 0, "\(form)")
            #expect(document.double(forKey: "missing") == 0, "\(form)")
            #expect(document.float(forKey: "true") == 1, "\(form)")
            #expect(document.float(forKey: "double") == Float(3.9), "\(form)")
        }
    }

    @Test func boolCoercions() async throws {
        for (form, document) in try await Self.forms(of: Self.sample()) {
            #expect(document.bool(forKey: "int"), "\(form)")  // non-zero numbers are true
            #expect(document.bool(forKey: "negative"), "\(form)")
            #expect(document.bool(forKey: "half"), "\(form)")
            #expect(document.bool(forKey: "int64Min"), "\(form)")
            #expect(!document.bool(forKey: "zero"), "\(form)")
            #expect(!document.bool(forKey: "doubleZero"), "\(form)")
            #expect(document.bool(forKey: "string"), "\(form)")  // any string is true…
            #expect(document.bool(forKey: "falseString"), "\(form)")  // …even "false"…
            #expect(document.bool(forKey: "emptyString"), "\(form)")  // …and ""
            #expect(document.bool(forKey: "array"), "\(form)")
            #expect(document.bool(forKey: "dictionary"), "\(form)")
            #expect(!document.bool(forKey: "null"), "\(form)")
            #expect(!document.bool(forKey: "missing"), "\(form)")
            #expect(!document.bool(forKey: "false"), "\(form)")
        }
    }

    @Test func stringAndContainerGettersDoNotCoerce() async throws {
        let document = Self.sample()
        #expect(document.string(forKey: "int") == nil)
        #expect(document.string(forKey: "null") == nil)
        #expect(document.array(forKey: "dictionary") == nil)
        #expect(document.dictionary(forKey: "array") == nil)
        #expect(document.array(forKey: "string") == nil)
        #expect(document.date(forKey: "int") == nil)
        let snapshot = Document(document)
        #expect(snapshot.string(forKey: "double") == nil)
        #expect(snapshot.array(forKey: "dictionary") == nil)
        #expect(snapshot.dictionary(forKey: "array") == nil)
        #expect(snapshot.array(forKey: "array")?.count == 3)
        #expect(snapshot.dictionary(forKey: "dictionary")?.string(forKey: "k") == "v")
    }

    @Test func arrayGettersCoerceLikeDictionaryGetters() throws {
        let array = MutableArrayObject(data: [7, "7", 2.5, true, NSNull(), "2024-03-05T14:30:15Z", 0])
        let snapshot = try #require(Document(MutableDocument(id: "a").setArray(array, forKey: "a")).array(forKey: "a"))
        for form in [array as any ArrayProtocol, snapshot as any ArrayProtocol] {
            #expect(form.int(at: 0) == 7)
            #expect(form.int(at: 1) == 0)
            #expect(form.string(at: 1) == "7")
            #expect(form.string(at: 0) == nil)
            #expect(form.int(at: 2) == 2)
            #expect(form.int64(at: 3) == 1)
            #expect(form.double(at: 3) == 1)
            #expect(form.float(at: 2) == 2.5)
            #expect(form.bool(at: 1))
            #expect(!form.bool(at: 4))
            #expect(!form.boolean(at: 6))
            #expect(form.value(at: 4) is NSNull)
            #expect(form.number(at: 2) == NSNumber(value: 2.5))
            #expect(form.date(at: 5) == Date(timeIntervalSince1970: 1_709_649_015))
            #expect(form.date(at: 0) == nil)
            #expect(form.value(at: 7) == nil)
            #expect(form.value(at: -1) == nil)
            #expect(form.int(at: 99) == 0 && !form.bool(at: 99) && form.string(at: 99) == nil)
        }
    }

    // MARK: - Dates

    static let isoDates: [(String, Double)] = [
        ("2024-03-05T14:30:15Z", 1_709_649_015),
        ("2024-03-05T14:30:15.000Z", 1_709_649_015),
        ("2024-03-05T14:30:15.250Z", 1_709_649_015.25),
        ("2024-03-05T14:30:15.5Z", 1_709_649_015.5),
        ("2024-03-05T14:30:15.123456Z", 1_709_649_015.123456),
        ("2024-03-05T14:30:15+00:00", 1_709_649_015),
        ("2024-03-05T16:30:15+02:00", 1_709_649_015),
        ("2024-03-05T16:30:15.250+02:00", 1_709_649_015.25),
        ("2024-03-05T09:00:15-0530", 1_709_649_015),
        ("2024-03-05T14:30Z", 1_709_649_000),
        ("2024-03-05T14:30:15", 1_709_649_015),  // no zone: UTC
        ("2024-03-05", 1_709_596_800),
        ("1969-07-20T20:17:40Z", -14_182_940),
        ("1969-12-31T23:59:59.500Z", -0.5),
        ("2000-02-29T00:00:00Z", 951_782_400),
    ]

    @Test(arguments: isoDates)
    func dateParsesISO8601(text: String, seconds: Double) {
        let document = MutableDocument(id: "d").setString(text, forKey: "when")
        let parsed = document.date(forKey: "when")
        #expect(
            parsed.map { abs($0.timeIntervalSince1970 - seconds) < 1e-6 } == true,
            "\(text) parsed as \(String(describing: parsed?.timeIntervalSince1970))")
        #expect(document["when"].date == parsed)
        #expect(Document(document).date(forKey: "when") == parsed)
    }

    @Test func dateOfAnythingElseIsNil() {
        let document = MutableDocument(id: "d")
        for (index, text) in [
            "", "yesterday", "2024-13-01T00:00:00Z", "2024-00-10", "2024-01-32", "2024-01-01T24:00:00Z",
            "2024-01-01T10:60:00Z", "2024-01-01T10:00:00.Z", "2024-01-01T10:00:00Zjunk",
            "24-01-01", "2024/01/01", "2024-01-01T10:00:00+5",
        ].enumerated() {
            document.setString(text, forKey: "d\(index)")
            #expect(document.date(forKey: "d\(index)") == nil, "\(text)")
        }
        document.setInt(1_709_649_015, forKey: "number")
        #expect(document.date(forKey: "number") == nil)
        #expect(document.date(forKey: "missing") == nil)
    }

    @Test func setDateStoresMillisecondsInUTC() async throws {
        let cases: [(Double, String)] = [
            (1_709_649_015.25, "2024-03-05T14:30:15.250Z"),
            (0, "1970-01-01T00:00:00.000Z"),
            (-0.5, "1969-12-31T23:59:59.500Z"),
            (-14_182_940, "1969-07-20T20:17:40.000Z"),
            (951_782_400.001, "2000-02-29T00:00:00.001Z"),
            (253_402_300_799.999, "9999-12-31T23:59:59.999Z"),
        ]
        let document = MutableDocument(id: "dates")
        for (index, (seconds, _)) in cases.enumerated() {
            document.setDate(Date(timeIntervalSince1970: seconds), forKey: "d\(index)")
        }
        document.setDate(nil, forKey: "none")
        for (form, read) in try await Self.forms(of: document) {
            for (index, (seconds, text)) in cases.enumerated() {
                #expect(read.string(forKey: "d\(index)") == text, "\(form)")
                #expect(
                    read.date(forKey: "d\(index)").map { abs($0.timeIntervalSince1970 - seconds) < 0.0005 } == true,
                    "\(form) \(text)")
            }
            #expect(read.value(forKey: "none") is NSNull, "\(form)")
        }
    }

    @Test func datesRoundTripToTheMillisecond() {
        // Bases chosen where binary floating point puts x.340 just below x.340.
        let document = MutableDocument(id: "round-trip")
        for base in [350_255_457.0, -1_452_791_396, 1_709_649_015, 0] {
            for millisecond in 0..<1000 {
                let date = Date(timeIntervalSince1970: base + Double(millisecond) / 1000)
                document.setDate(date, forKey: "d")
                let text = document.string(forKey: "d")
                #expect(text?.hasSuffix(String(format: ".%03dZ", millisecond)) == true, "\(base) \(millisecond): \(text ?? "")")
                // Reading the date back and storing it again must not change the text.
                document.setDate(document.date(forKey: "d"), forKey: "again")
                #expect(document.string(forKey: "again") == text, "\(base) \(millisecond)")
            }
        }
    }

    @Test func datesAtTheEdgesOfFourDigitYears() throws {
        let document = MutableDocument(id: "edges")
            .setDate(Date(timeIntervalSince1970: -62_167_219_200), forKey: "first")
            .setDate(Date(timeIntervalSince1970: 253_402_300_799.999), forKey: "last")
            .setDate(Date.distantPast, forKey: "distantPast")
            .setDate(Date.distantFuture, forKey: "distantFuture")
        #expect(document.string(forKey: "first") == "0000-01-01T00:00:00.000Z")
        #expect(document.string(forKey: "last") == "9999-12-31T23:59:59.999Z")
        #expect(document.string(forKey: "distantPast") == "0000-12-30T00:00:00.000Z")  // proleptic Gregorian
        #expect(document.string(forKey: "distantFuture") == "4001-01-01T00:00:00.000Z")
        for key in ["first", "last", "distantPast", "distantFuture"] {
            let date = try #require(document.date(forKey: key), "\(key)")
            #expect(MutableDocument().setDate(date, forKey: key).string(forKey: key) == document.string(forKey: key))
        }
    }

    @Test(arguments: [1e300, -1e300, 1e20, 253_402_300_800, -62_167_219_200.001, .nan, .infinity])
    func datesOutsideFourDigitYearsAreRefusedBySave(seconds: Double) async throws {
        // Setting must not trap; the save reports the key, like any other value it cannot store.
        let document = MutableDocument(id: "far").setInt(1, forKey: "fine")
            .setDate(Date(timeIntervalSince1970: seconds), forKey: "when")
        #expect(document.value(forKey: "when") == nil)
        try await withDatabase { database, _ in
            let message = await expectCouchetteError(.invalidParameter) {
                try await database.defaultCollection().save(document: document)
            }
            #expect(message?.contains("when") == true, "\(message ?? "")")
        }
        let array = MutableArrayObject().addDate(Date(timeIntervalSince1970: seconds))
        #expect(array.value(at: 0) == nil)
    }

    // MARK: - Nested mutable edits

    @Test func nestedEditsShowUpInTheDocumentAndAreSaved() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "person")
                .setDictionary(MutableDictionaryObject().setString("Springfield", forKey: "city"), forKey: "address")
                .setArray(MutableArrayObject().addString("a").addString("b"), forKey: "tags")

            document.dictionary(forKey: "address")!.setString("Shelbyville", forKey: "city")
            document.dictionary(forKey: "address")!.setDictionary(MutableDictionaryObject().setInt(1, forKey: "floor"), forKey: "unit")
            document.dictionary(forKey: "address")!.dictionary(forKey: "unit")!.setInt(2, forKey: "floor")
            document.array(forKey: "tags")!.addString("c")
            try document.array(forKey: "tags")!.setValue("B", at: 1)
            try document.array(forKey: "tags")!.insertValue("start", at: 0)
            try document.array(forKey: "tags")!.removeValue(at: 3)
            #expect(document["address"]["city"].string == "Shelbyville")
            #expect(document.array(forKey: "tags")?.toArray() as? [String] == ["start", "a", "B"])

            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "person"))
            #expect(stored["address"]["city"].string == "Shelbyville")
            #expect(stored["address"]["unit"]["floor"].int == 2)
            #expect(stored.array(forKey: "tags")?.toArray() as? [String] == ["start", "a", "B"])

            // Editing a stored document's nested values through a mutable copy.
            let edit = stored.toMutable()
            let address = try #require(edit.dictionary(forKey: "address"))
            address.setString("Capital City", forKey: "city")
            address.removeValue(forKey: "unit")
            edit.array(forKey: "tags")!.addDictionary(MutableDictionaryObject().setBoolean(true, forKey: "deep"))
            edit.array(forKey: "tags")!.dictionary(at: 3)!.setArray(MutableArrayObject(data: [1, 2]), forKey: "list")
            edit.array(forKey: "tags")!.dictionary(at: 3)!.array(forKey: "list")!.addInt(3)
            address.setString("Ogdenville", forKey: "city")  // the object stays live after other edits
            try await collection.save(document: edit)

            let reread = try #require(try await collection.document(id: "person"))
            #expect(reread.toJSON() == #"{"address":{"city":"Ogdenville"},"tags":["start","a","B",{"deep":true,"list":[1,2,3]}]}"#)
            #expect(reread.revisionID?.hasPrefix("2-") == true)
            // The first snapshot is unchanged.
            #expect(stored["address"]["city"].string == "Shelbyville")
        }
    }

    @Test func mutableArrayEditsRejectBadIndexes() async throws {
        let array = MutableArrayObject(data: ["a", "b"])
        await expectCouchetteError(.invalidParameter) { try array.setValue("x", at: 2) }
        await expectCouchetteError(.invalidParameter) { try array.setValue("x", at: -1) }
        await expectCouchetteError(.invalidParameter) { try array.insertValue("x", at: 3) }
        await expectCouchetteError(.invalidParameter) { try array.insertValue("x", at: -1) }
        await expectCouchetteError(.invalidParameter) { try array.removeValue(at: 2) }
        try array.insertValue("end", at: 2)  // inserting at count appends
        #expect(array.toArray() as? [String] == ["a", "b", "end"])
        array.addInt(1).addInt64(.max).addDouble(2.5).addBoolean(false).addValue(nil).addDate(Date(timeIntervalSince1970: 0))
        #expect(array.count == 9)
        #expect(array.toJSON() == #"["a","b","end",1,9223372036854775807,2.5,false,null,"1970-01-01T00:00:00.000Z"]"#)
    }

    // MARK: - Fragments

    @Test func fragmentsFollowPaths() async throws {
        let document = MutableDocument(
            id: "f",
            data: [
                "a": ["b": ["first", 2, ["c": true]], "n": NSNull()],
                "list": [["name": "x"], ["name": "y"]],
                "s": "text",
            ])
        for (form, read) in try await Self.forms(of: document) {
            guard let read = read as? Document else { continue }
            #expect(read["a"]["b"][0].string == "first", "\(form)")
            #expect(read["a"]["b"][1].int == 2, "\(form)")
            #expect(read["a"]["b"][2]["c"].bool, "\(form)")
            #expect(read["list"][1]["name"].string == "y", "\(form)")
            #expect(read["a"]["b"].array?.count == 3, "\(form)")
            #expect(read["a"].dictionary?.count == 2, "\(form)")
            #expect(read["a"]["n"].exists, "\(form)")
            #expect(read["a"]["n"].value is NSNull, "\(form)")
            #expect(read["s"].exists && read["s"].string == "text", "\(form)")

            for missing in [
                read["nope"], read["nope"]["x"][3], read["a"]["b"][3], read["a"]["b"][-1],
                read["a"]["b"]["key"], read["a"][0], read["s"]["x"], read["s"][0], read["a"]["n"]["x"],
            ] {
                #expect(!missing.exists, "\(form)")
                #expect(missing.value == nil && missing.string == nil && missing.int == 0 && missing.int64 == 0, "\(form)")
                #expect(missing.double == 0 && missing.float == 0 && !missing.bool && !missing.boolean, "\(form)")
                #expect(missing.number == nil && missing.date == nil && missing.array == nil && missing.dictionary == nil, "\(form)")
            }
            // Containers' own subscripts.
            #expect(read.dictionary(forKey: "a")?["b"][2]["c"].bool == true, "\(form)")
            #expect(read.array(forKey: "list")?[0]["name"].string == "x", "\(form)")
            #expect(read.array(forKey: "list")?[5]["name"].exists == false, "\(form)")
        }
        // The mutable document reads through mutable fragments.
        #expect(document["a"]["b"][0].string == "first")
        #expect(document["a"]["b"][2]["c"].bool)
        #expect(!document["nope"]["x"][3].exists)
        #expect(document["nope"]["x"][3].string == nil)
        #expect(!document["a"]["b"][3].exists)
    }

    @Test func mutableFragmentsSetValuesWhereTheParentExists() async throws {
        let document = MutableDocument(id: "mf", data: ["a": ["b": ["x", "y"]], "n": 1])
        document["a"]["b"][0].string = "X"
        document["a"]["c"].int = 5
        document["n"].double = 2.5
        document["flag"].bool = true
        document["when"].date = Date(timeIntervalSince1970: 0)
        document["a"]["d"].dictionary = MutableDictionaryObject().setString("deep", forKey: "e")
        document["a"]["d"]["e"].string = "deeper"
        document["list"].array = MutableArrayObject(data: [1])
        document["list"][0].int64 = .min

        // Parents that do not exist, or indexes out of range: nothing happens.
        document["missing"]["x"].string = "lost"
        document["a"]["b"][2].string = "lost"
        document["a"]["b"][-1].string = "lost"
        document["n"]["x"].int = 1

        #expect(
            document.toJSON() == #"{"a":{"b":["X","y"],"c":5,"d":{"e":"deeper"}},"flag":true,"list":[-9223372036854775808],"#
                + #""n":2.5,"when":"1970-01-01T00:00:00.000Z"}"#)
        #expect(document["a"]["d"].dictionary?.string(forKey: "e") == "deeper")
        #expect(document["list"].array?.int64(at: 0) == .min)
        #expect(document["a"]["b"][0].exists && !document["a"]["b"][2].exists)
        #expect(document["a"]["b"][0].value as? String == "X")

        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "mf"))
            #expect(stored.toJSON() == document.toJSON())
        }
    }

    // MARK: - toDictionary / toJSON

    @Test func toDictionaryGivesPlainSwiftValues() async throws {
        for (form, read) in try await Self.forms(of: Self.sample()) {
            let dictionary = read.toDictionary()
            #expect(dictionary.count == 21, "\(form)")
            #expect(dictionary["null"] is NSNull, "\(form)")
            #expect(dictionary["string"] as? String == "hello", "\(form)")
            #expect(dictionary["int"] as? Int == 7, "\(form)")
            #expect(dictionary["int64Max"] as? Int == Int.max, "\(form)")
            #expect(dictionary["double"] as? Double == 3.9, "\(form)")
            #expect(dictionary["true"] as? Bool == true, "\(form)")
            #expect(dictionary["missing"] == nil, "\(form)")
            let array = try #require(dictionary["array"] as? [Any], "\(form)")
            #expect(
                array.count == 3 && array[0] as? Int == 1 && array[1] as? String == "two" && array[2] as? Double == 3.5,
                "\(form)")
            #expect((dictionary["dictionary"] as? [String: Any])?["k"] as? String == "v", "\(form)")
        }
    }

    @Test func toJSONIsCompactAndSorted() async throws {
        let document = MutableDocument(
            id: "j",
            data: [
                "name": "Ann \"the\" Coder/\n", "age": 40, "score": 2.5, "whole": 3.0, "none": NSNull(), "ok": true,
                "tags": ["a", 1, NSNull(), ["nested": []]], "empty": [String: Any](), "big": Int64.max, "é": "ü",
            ])
        let expected =
            #"{"age":40,"big":9223372036854775807,"empty":{},"name":"Ann \"the\" Coder/\n","none":null,"#
            + #""ok":true,"score":2.5,"tags":["a",1,null,{"nested":[]}],"whole":3.0,"é":"ü"}"#
        for (form, read) in try await Self.forms(of: document) {
            #expect(read.toJSON() == expected, "\(form)")
        }
        #expect(Document(document).dictionary(forKey: "empty")?.toJSON() == "{}")
        #expect(Document(document).array(forKey: "tags")?.toJSON() == #"["a",1,null,{"nested":[]}]"#)
        #expect(document.array(forKey: "tags")?.toJSON() == #"["a",1,null,{"nested":[]}]"#)
        #expect(document.dictionary(forKey: "empty")?.toJSON() == "{}")
        #expect(try JSON.parse(expected) == JSON.parse(Document(document).toJSON()))
        #expect(MutableDocument().toJSON() == "{}")
    }

    // MARK: - JSON in

    @Test func documentsAreCreatedFromJSONObjects() async throws {
        let document = try MutableDocument(
            id: "json", json: #"{"a": 1, "b": [true, null, 2.5], "c": {"d": "e"}, "max": 9223372036854775807}"#)
        #expect(document.id == "json")
        #expect(document.int(forKey: "a") == 1)
        #expect(document.array(forKey: "b")?.bool(at: 0) == true)
        #expect(document.array(forKey: "b")?.value(at: 1) is NSNull)
        #expect(document["c"]["d"].string == "e")
        #expect(document.int64(forKey: "max") == .max)
        #expect(document.toJSON() == #"{"a":1,"b":[true,null,2.5],"c":{"d":"e"},"max":9223372036854775807}"#)

        try document.setJSON(#"{"replaced": "yes"}"#)
        #expect(document.keys == ["replaced"])
        #expect(try MutableDocument(id: nil, json: "{}").count == 0)
        #expect(try MutableDocument(id: nil, json: "{}").id.isEmpty == false)
    }

    @Test(arguments: ["[1,2]", "1", "\"text\"", "null", "true", "[]"])
    func jsonThatIsNotAnObjectIsRejected(json: String) async throws {
        let message = await expectCouchetteError(.invalidParameter) { _ = try MutableDocument(id: "x", json: json) }
        #expect(message?.contains("object") == true, "\(message ?? "")")
        let document = MutableDocument(id: "keep").setInt(1, forKey: "kept")
        await expectCouchetteError(.invalidParameter) { try document.setJSON(json) }
        #expect(document.toJSON() == #"{"kept":1}"#)  // unchanged
    }

    @Test func malformedJSONIsRejectedNamingTheOffset() async throws {
        let message = await expectCouchetteError(.invalidParameter) { _ = try MutableDocument(id: "x", json: #"{"a": 1,}"#) }
        #expect(message?.contains("byte 8") == true, "\(message ?? "")")
        let document = MutableDocument(id: "keep").setInt(1, forKey: "kept")
        await expectCouchetteError(.invalidParameter) { try document.setJSON(#"{"a": "#) }
        #expect(document.toJSON() == #"{"kept":1}"#)
    }

    // MARK: - Copies and snapshots

    @Test func toMutableCopiesAStoredDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "orig", data: ["n": 1, "inner": ["k": "v"], "list": [1]]))
            let stored = try #require(try await collection.document(id: "orig"))
            let copy = stored.toMutable()
            #expect(copy.id == stored.id)
            #expect(copy.revisionID == stored.revisionID)
            #expect(copy.sequence == stored.sequence)
            #expect(copy.toJSON() == stored.toJSON())
            copy.setInt(2, forKey: "n")
            copy.dictionary(forKey: "inner")!.setString("changed", forKey: "k")
            copy.array(forKey: "list")!.addInt(2)
            #expect(stored.int(forKey: "n") == 1)
            #expect(stored["inner"]["k"].string == "v")
            #expect(stored.array(forKey: "list")?.count == 1)

            // A second copy is independent of the first.
            let other = stored.toMutable()
            #expect(other.int(forKey: "n") == 1)
            #expect(other["inner"]["k"].string == "v")
        }
    }

    @Test func toMutableOfAMutableDocumentIsADeepCopy() {
        let original = MutableDocument(id: "o", data: ["inner": ["k": "v"], "list": [["x": 1]]])
        _ = original.dictionary(forKey: "inner")  // materialize the nested objects first
        _ = original.array(forKey: "list")?.dictionary(at: 0)
        let copy = original.toMutable()
        #expect(copy.id == original.id)
        copy.dictionary(forKey: "inner")!.setString("copy", forKey: "k")
        copy.array(forKey: "list")!.dictionary(at: 0)!.setInt(2, forKey: "x")
        original.dictionary(forKey: "inner")!.setString("original", forKey: "extra")
        #expect(original.toJSON() == #"{"inner":{"extra":"original","k":"v"},"list":[{"x":1}]}"#)
        #expect(copy.toJSON() == #"{"inner":{"k":"copy"},"list":[{"x":2}]}"#)
    }

    @Test func toMutableIsADeepCopyEvenWhenAValueCannotBeStored() async throws {
        let original = MutableDocument(id: "o").setValue(Unsupported(), forKey: "bad")
            .setDictionary(MutableDictionaryObject().setInt(1, forKey: "n"), forKey: "inner")
            .setArray(MutableArrayObject().addInt(1), forKey: "list")
        let copy = original.toMutable()
        copy.dictionary(forKey: "inner")!.setInt(2, forKey: "n")
        copy.array(forKey: "list")!.addInt(2)
        #expect(original["inner"]["n"].int == 1)
        #expect(original.array(forKey: "list")?.count == 1)
        #expect(copy["inner"]["n"].int == 2)
        // The copy still holds the value that cannot be stored, and a save still says so.
        try await withDatabase { database, _ in
            let message = await expectCouchetteError(.invalidParameter) {
                try await database.defaultCollection().save(document: copy)
            }
            #expect(message?.contains("bad") == true, "\(message ?? "")")
        }
    }

    @Test func containerToMutableCopies() throws {
        let snapshot = Document(MutableDocument(id: "c", data: ["d": ["k": 1], "a": [1, 2]]))
        let dictionary = try #require(snapshot.dictionary(forKey: "d")?.toMutable())
        dictionary.setInt(2, forKey: "k").setString("new", forKey: "n")
        #expect(dictionary.toJSON() == #"{"k":2,"n":"new"}"#)
        let array = try #require(snapshot.array(forKey: "a")?.toMutable())
        array.addInt(3)
        #expect(array.toJSON() == "[1,2,3]")
        #expect(snapshot.toJSON() == #"{"a":[1,2],"d":{"k":1}}"#)
        #expect(snapshot.dictionary(forKey: "d") == Document(MutableDocument(id: "x", data: ["d": ["k": 1]])).dictionary(forKey: "d"))
        #expect(snapshot.dictionary(forKey: "d") != Document(MutableDocument(id: "y", data: ["d": ["k": 2]])).dictionary(forKey: "d"))
    }

    @Test func documentSnapshotIsFrozen() throws {
        let mutable = MutableDocument(id: "snap").setString("before", forKey: "s")
            .setDictionary(MutableDictionaryObject().setInt(1, forKey: "n"), forKey: "inner")
        let snapshot = Document(mutable)
        mutable.setString("after", forKey: "s")
        mutable.dictionary(forKey: "inner")!.setInt(2, forKey: "n")
        mutable.setBoolean(true, forKey: "added")
        #expect(snapshot.id == "snap")
        #expect(snapshot.revisionID == nil)
        #expect(snapshot.sequence == 0)
        #expect(snapshot.string(forKey: "s") == "before")
        #expect(snapshot["inner"]["n"].int == 1)
        #expect(snapshot.dictionary(forKey: "inner") != nil)  // immutable DictionaryObject
        #expect(!snapshot.contains(key: "added"))
        #expect(snapshot.count == 2)
        #expect(Document(mutable).toJSON() == mutable.toJSON())
    }

    @Test func snapshotKeepsTheRevisionOfASavedDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "rev").setInt(1, forKey: "n")
            try await collection.save(document: document)
            let snapshot = Document(document)
            #expect(snapshot.revisionID == document.revisionID)
            #expect(snapshot.revisionID?.hasPrefix("1-") == true)
            #expect(snapshot.sequence == document.sequence)
            #expect(snapshot.int(forKey: "n") == 1)
        }
    }

    // MARK: - Ids

    @Test func generatedIDsAreUniqueAndURLSafe() {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
        var seen = Set<String>()
        for _ in 0..<5000 {
            let id = MutableDocument().id
            #expect(id.count >= 20)
            #expect(id.allSatisfy(unreserved.contains), "\(id)")
            #expect(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_.~"))) == id)
            seen.insert(id)
        }
        #expect(seen.count == 5000)
        #expect(MutableDocument(id: nil, data: [:]).id != MutableDocument(id: nil, data: [:]).id)
        #expect(MutableDocument(id: "given").id == "given")
    }

    // MARK: - Values a save refuses

    struct Unsupported { let field = 1 }

    @Test func settersAcceptEverySupportedType() async throws {
        let document = MutableDocument(id: "types")
            .setValue(Int8(-8), forKey: "int8").setValue(Int16(-16), forKey: "int16").setValue(Int32(-32), forKey: "int32")
            .setValue(UInt8(8), forKey: "uint8").setValue(UInt16(16), forKey: "uint16").setValue(UInt32(32), forKey: "uint32")
            .setValue(UInt64(64), forKey: "uint64").setValue(UInt(7), forKey: "uint")
            .setValue(Float(0.5), forKey: "float").setValue("sub"[...], forKey: "substring")
            .setValue(NSNull(), forKey: "nsnull").setValue(NSNumber(value: 12), forKey: "nsnumber")
            .setValue(NSNumber(value: 1.5), forKey: "nsdouble").setValue(NSNumber(value: true), forKey: "nsbool")
            .setValue(["x": [1, ["y": NSNull()]]], forKey: "nested")
            .setValue([Date(timeIntervalSince1970: 0)], forKey: "dates")
            .setValue(Value.array([.int(1)]), forKey: "value")
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "types"))
            #expect(
                stored.toJSON() == #"{"dates":["1970-01-01T00:00:00.000Z"],"float":0.5,"int16":-16,"int32":-32,"#
                    + #""int8":-8,"nested":{"x":[1,{"y":null}]},"nsbool":true,"nsdouble":1.5,"nsnull":null,"nsnumber":12,"#
                    + #""substring":"sub","uint":7,"uint16":16,"uint32":32,"uint64":64,"uint8":8,"value":[1]}"#)
        }
    }

    @Test func numbersFromJSONSerializationKeepTheirType() throws {
        let parsed = try JSONSerialization.jsonObject(
            with: Data(#"{"zero":0,"one":1,"two":2,"yes":true,"no":false,"whole":2.0,"unit":1.0,"half":0.5}"#.utf8))
        let document = MutableDocument(id: "ns", data: try #require(parsed as? [String: Any]))
            .setValue(NSNumber(value: 0), forKey: "nsZero").setValue(NSNumber(value: 1), forKey: "nsOne")
            .setValue(NSNumber(value: 1.0), forKey: "nsUnit").setValue(NSNumber(value: false), forKey: "nsFalse")
            .setValue([NSNumber(value: 1), NSNumber(value: true)], forKey: "nsList")
        let snapshot = Document(document)
        for key in ["zero", "one", "two", "nsZero", "nsOne"] {
            #expect(snapshot.value(forKey: key) is Int, "\(key): \(String(describing: snapshot.value(forKey: key)))")
        }
        for key in ["whole", "unit", "half", "nsUnit"] {
            #expect(snapshot.value(forKey: key) is Double, "\(key): \(String(describing: snapshot.value(forKey: key)))")
        }
        for key in ["yes", "no", "nsFalse"] {
            #expect(snapshot.value(forKey: key) is Bool, "\(key): \(String(describing: snapshot.value(forKey: key)))")
        }
        #expect(snapshot.int(forKey: "one") == 1 && snapshot.double(forKey: "unit") == 1 && snapshot.bool(forKey: "yes"))
        #expect(snapshot.array(forKey: "nsList")?.toJSON() == "[1,true]")
        #expect(snapshot.array(forKey: "nsList")?.value(at: 0) is Int)
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func savingNonFiniteNumbersThrowsNamingTheKey(number: Double) async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let top = MutableDocument(id: "top").setInt(1, forKey: "fine").setDouble(number, forKey: "score")
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(document: top) }
            #expect(message?.contains("score") == true, "\(message ?? "")")
            #expect(message?.contains("top") == true, "\(message ?? "")")  // and the document
            #expect(top.revisionID == nil)

            let nested = MutableDocument(id: "nested")
                .setDictionary(
                    MutableDictionaryObject().setArray(MutableArrayObject(data: [1, 2, number]), forKey: "list"),
                    forKey: "outer")
            let nestedMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: nested) }
            #expect(nestedMessage?.contains("outer.list[2]") == true, "\(nestedMessage ?? "")")

            let float = MutableDocument(id: "float").setFloat(Float(number), forKey: "ratio")
            let floatMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: float) }
            #expect(floatMessage?.contains("ratio") == true, "\(floatMessage ?? "")")

            #expect(try await collection.count == 0)
            #expect(try await collection.document(id: "top") == nil)

            // Once the value is fixed, the same document saves.
            top.setDouble(1.5, forKey: "score")
            try await collection.save(document: top)
            #expect(try await collection.document(id: "top")?.double(forKey: "score") == 1.5)
        }
    }

    @Test func savingAnUnsupportedTypeThrowsNamingTheKey() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let top = MutableDocument(id: "custom").setString("ok", forKey: "fine").setValue(Unsupported(), forKey: "thing")
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(document: top) }
            #expect(message?.contains("thing") == true, "\(message ?? "")")
            #expect(message?.contains("Unsupported") == true, "\(message ?? "")")

            let nested = MutableDocument(id: "nested").setInt(1, forKey: "fine")
                .setDictionary(MutableDictionaryObject().setValue(Unsupported(), forKey: "inner"), forKey: "outer")
            let nestedMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: nested) }
            #expect(nestedMessage?.contains("outer") == true && nestedMessage?.contains("inner") == true, "\(nestedMessage ?? "")")

            let inCollection = MutableDocument(id: "plain").setValue(["list": [1, Unsupported()]], forKey: "data")
            let plainMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: inCollection) }
            #expect(plainMessage?.contains("data") == true && plainMessage?.contains("list") == true, "\(plainMessage ?? "")")

            let inArray = MutableDocument(id: "array").setArray(MutableArrayObject().addInt(1).addValue(Unsupported()), forKey: "items")
            let arrayMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: inArray) }
            #expect(arrayMessage?.contains("items") == true, "\(arrayMessage ?? "")")

            let wrongKeys = MutableDocument(id: "keys").setValue([1: "one"], forKey: "byNumber")
            let keysMessage = await expectCouchetteError(.invalidParameter) { try await collection.save(document: wrongKeys) }
            #expect(keysMessage?.contains("byNumber") == true, "\(keysMessage ?? "")")

            #expect(try await collection.count == 0)
            top.removeValue(forKey: "thing")
            try await collection.save(document: top)
            #expect(try await collection.document(id: "custom")?.toJSON() == #"{"fine":"ok"}"#)
        }
    }
}
