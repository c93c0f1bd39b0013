import Foundation
import Testing

@testable import Couchette

/// Every type the document encoder supports, for round trips.
final class EveryType: Codable {
    enum Priority: Int, Codable { case low = 1, high = 3 }
    enum Status: String, Codable { case open, done }
    enum Shape: Codable, Equatable { case circle(radius: Double), square(side: Int) }
    struct Point: Codable, Equatable { var x: Int; var y: Int }

    @DocumentID var id: String?
    var string = "héllo, wörld ✓"
    var emptyString = ""
    var bool = true
    var int = Int.min
    var int8 = Int8.min
    var int16 = Int16.max
    var int32 = Int32.min
    var int64 = Int64.max
    var uint = UInt(Int64.max)
    var uint8 = UInt8.max
    var uint16 = UInt16.max
    var uint32 = UInt32.max
    var uint64 = UInt64(Int64.max)
    var double = 3.141592653589793
    var float: Float = 1.5
    var date = Date(timeIntervalSince1970: 1_700_000_000.123)
    var url = URL(string: "https://example.com/a/b?c=d#e")!
    var uuid = UUID()
    var decimal = Decimal(string: "12.75")!
    var wholeDecimal = Decimal(42)
    var priority = Priority.high
    var status = Status.done
    var shape = Shape.circle(radius: 2.5)
    var point = Point(x: 1, y: -2)
    var tags = ["a", "b", "c"]
    var matrix = [[1, 2], [3], []]
    var scores = ["math": 9.5, "art": 7.0]
    var byNumber = [1: "one", 2: "two"]
    var dates = [Date(timeIntervalSince1970: 0)]
    var optionalPresent: String? = "here"
    var optionalNil: String?
    var optionalInt: Int? = 7
    var optionalPoint: Point?
    var arrayOfOptionals: [Int?] = [1, nil, 3]
}

@Suite struct DocumentEncoderTests {
    @Test func everySupportedTypeRoundTripsThroughTheStoredFormat() throws {
        let original = EveryType()
        let bytes = try ValueEncoder.encode(DocumentEncoder.encode(original).properties)
        let copy = try DocumentDecoder.decode(EveryType.self, from: EncodedValue(bytes: bytes))
        #expect(copy.string == original.string)
        #expect(copy.emptyString == "")
        #expect(copy.bool == true)
        #expect(copy.int == .min)
        #expect(copy.int8 == .min)
        #expect(copy.int16 == .max)
        #expect(copy.int32 == .min)
        #expect(copy.int64 == .max)
        #expect(copy.uint == UInt(Int64.max))
        #expect(copy.uint8 == .max)
        #expect(copy.uint16 == .max)
        #expect(copy.uint32 == .max)
        #expect(copy.uint64 == UInt64(Int64.max))
        #expect(copy.double == original.double)
        #expect(copy.float == 1.5)
        #expect(abs(copy.date.timeIntervalSince(original.date)) < 0.001)
        #expect(copy.url == original.url)
        #expect(copy.uuid == original.uuid)
        #expect(copy.decimal == Decimal(string: "12.75")!)
        #expect(copy.wholeDecimal == 42)
        #expect(copy.priority == .high)
        #expect(copy.status == .done)
        #expect(copy.shape == .circle(radius: 2.5))
        #expect(copy.point == EveryType.Point(x: 1, y: -2))
        #expect(copy.tags == ["a", "b", "c"])
        #expect(copy.matrix == [[1, 2], [3], []])
        #expect(copy.scores == ["math": 9.5, "art": 7.0])
        #expect(copy.byNumber == [1: "one", 2: "two"])
        #expect(copy.dates == [Date(timeIntervalSince1970: 0)])
        #expect(copy.optionalPresent == "here")
        #expect(copy.optionalNil == nil)
        #expect(copy.optionalInt == 7)
        #expect(copy.optionalPoint == nil)
        #expect(copy.arrayOfOptionals == [1, nil, 3])
    }

    @Test func valuesAreStoredAsCouchbaseLiteStoresThem() throws {
        let model = EveryType()
        let stored = try storedProperties(of: model)
        #expect(stored["date"] == .string("2023-11-14T22:13:20.123Z"))
        #expect(stored["url"] == .string("https://example.com/a/b?c=d#e"))
        #expect(stored["uuid"] == .string(model.uuid.uuidString))
        #expect(stored["decimal"] == .double(12.75))
        #expect(stored["wholeDecimal"] == .int(42))
        #expect(stored["priority"] == .int(3))
        #expect(stored["status"] == .string("done"))
        #expect(stored["float"] == .double(1.5))
        #expect(stored["int64"] == .int(.max))
        #expect(stored["point"] == .dictionary(["x": .int(1), "y": .int(-2)]))
        #expect(stored["tags"] == .array([.string("a"), .string("b"), .string("c")]))
        #expect(stored["byNumber"] == .dictionary(["1": .string("one"), "2": .string("two")]))
    }

    @Test func nilOptionalsAreExplicitNulls() throws {
        let stored = try storedProperties(of: EveryType())
        #expect(stored["optionalNil"] == .null)
        #expect(stored["optionalPoint"] == .null)
        #expect(stored["arrayOfOptionals"] == .array([.int(1), .null, .int(3)]))
        let task = TodoTask(title: "t")
        #expect(try storedProperties(of: task) == ["title": .string("t"), "completed": .null])
    }

    @Test func theModelsOwnIdIsNotAProperty() throws {
        let task = TodoTask(title: "t")
        task.id = "task-1"
        let output = try DocumentEncoder.encode(task)
        #expect(output.properties == .dictionary(["title": .string("t"), "completed": .null]))
        #expect(output.documentIDs.count == 1)
        #expect(output.documentIDs.first === (try documentID(of: task)))
    }

    @Test func nestedModelsStoreTheirIdAsANormalField() throws {
        let person = Person(
            id: "p1", name: "Ada",
            contacts: [Contact(id: "c1", name: "Bob"), Contact(name: "Cy")],
            best: Contact(id: "c9", name: "Di"),
            byRole: ["boss": Contact(id: "c2", name: "Eve", email: "eve@example.com")])
        let stored = try storedProperties(of: person)
        #expect(stored["id"] == nil)
        #expect(
            stored["contacts"]
                == .array([
                    .dictionary(["id": .string("c1"), "name": .string("Bob"), "email": .null]),
                    .dictionary(["id": .null, "name": .string("Cy"), "email": .null]),
                ]))
        #expect(stored["best"]?["id"] == .string("c9"))
        #expect(stored["byRole"]?["boss"]?["id"] == .string("c2"))
    }

    @Test func dataIsRefusedWithAHintToUseBlob() throws {
        final class WithData: Codable {
            @DocumentID var id: String?
            var photo = Data([1, 2, 3])
        }
        do {
            _ = try DocumentEncoder.encode(WithData())
            Issue.record("Data was encoded")
        } catch let error as CouchetteError {
            #expect(error.code == .invalidParameter)
            #expect(error.message.contains("photo"))
            #expect(error.message.contains("Blob"))
        }
    }

    @Test func integersBeyondInt64AreKeptExactly() throws {
        struct Big: Codable, Equatable { var counts: [UInt64]; var wide: Int128 }
        let model = Big(counts: [1, UInt64.max], wide: Int128.min)
        let value = try DocumentEncoder.encodeValue(model)
        #expect(JSON.string(from: value) == #"{"counts":[1,18446744073709551615],"wide":-170141183460469231731687303715884105728}"#)
        let body = try ValueEncoder.encode(value)
        #expect(try DocumentDecoder.decode(Big.self, from: EncodedValue(bytes: body)) == model)
        #expect(throws: DecodingError.self) {
            _ = try DocumentDecoder.decode([Int64].self, from: EncodedValue(bytes: try ValueEncoder.encode(value["counts"]!)))
        }
    }

    @Test(arguments: [-1e20, 1e20, -62_167_219_200.001, 253_402_300_800.0, Double.nan, Double.infinity])
    func datesOutsideFourDigitYearsAreRefusedNotTrapped(seconds: Double) throws {
        struct Agenda: Codable { var dates: [Date] }
        let error = try #require(throws: CouchetteError.self) {
            _ = try DocumentEncoder.encodeValue(Agenda(dates: [Date(), Date(timeIntervalSince1970: seconds)]))
        }
        #expect(error.code == .invalidParameter)
        #expect(error.message.contains("dates[1]"))
    }

    @Test func nanIsRefusedNamingTheKeyPath() throws {
        final class Reading: Codable {
            @DocumentID var id: String?
            var values: [String: Double] = ["ok": 1, "bad": .nan]
        }
        let message = try #require(throws: CouchetteError.self) { _ = try ModelWrite(saving: Reading()) }.message
        #expect(message.contains("Reading"))
        #expect(message.contains("values.bad"))
    }

    @Test func aCycleOfObjectsIsRefusedNotAStackOverflow() throws {
        final class Node: Codable {
            @DocumentID var id: String?
            var name = "loop"
            var next: Node?
        }
        let node = Node()
        node.next = node
        let error = try #require(throws: CouchetteError.self) { _ = try DocumentEncoder.encode(node) }
        #expect(error.code == .invalidParameter)
        #expect(error.message.contains("contain itself"))
        node.next = nil  // break the cycle so the node can be freed
    }

    @Test func aModelThatIsNotADictionaryIsRefused() throws {
        final class Scalar: Codable {
            var value = 3
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(value)
            }
        }
        #expect(throws: CouchetteError.self) { _ = try DocumentEncoder.encode(Scalar()) }
    }

    @Test func mixingContainerKindsIsAnErrorNotACrash() throws {
        struct Confused: Encodable {
            enum Keys: CodingKey { case a }
            func encode(to encoder: any Encoder) throws {
                var keyed = encoder.container(keyedBy: Keys.self)
                try keyed.encode(1, forKey: .a)
                var unkeyed = encoder.unkeyedContainer()
                try unkeyed.encode(2)
            }
        }
        let error = try #require(throws: CouchetteError.self) { _ = try DocumentEncoder.encodeValue(Confused()) }
        #expect(error.code == .invalidParameter)
    }

    // MARK: - Subclasses

    @Test func superEncoderStoresTheParentUnderSuper() throws {
        let dog = Dog(name: "Rex", breed: "collie")
        dog.id = "dog-1"
        let output = try DocumentEncoder.encode(dog)
        #expect(output.properties == .dictionary(["breed": .string("collie"), "super": .dictionary(["name": .string("Rex")])]))
        // The parent's @DocumentID is the document's id, even under "super".
        #expect(output.documentIDs.count == 1)

        let document = Document(id: "dog-1", revisionID: "1-abc", sequence: 1, body: try ValueEncoder.encode(output.properties))
        let copy = try DocumentDecoder.decodeModel(Dog.self, from: document)
        #expect(copy.id == "dog-1")
        #expect(copy.name == "Rex")
        #expect(copy.breed == "collie")
        #expect(try boundRevision(of: copy) == "1-abc")
    }

    @Test func aSubclassSharingItsEncoderIsFlat() throws {
        let cat = Cat(name: "Tom", lives: 9)
        cat.id = "cat-1"
        let output = try DocumentEncoder.encode(cat)
        #expect(output.properties == .dictionary(["name": .string("Tom"), "lives": .int(9)]))
        let document = Document(id: "cat-1", revisionID: "2-def", sequence: 2, body: try ValueEncoder.encode(output.properties))
        let copy = try DocumentDecoder.decodeModel(Cat.self, from: document)
        #expect(copy.id == "cat-1")
        #expect(copy.lives == 9)
        #expect(copy.name == "Tom")
    }

    // MARK: - Other coders

    @Test func documentIDEncodesAsAStringWithOtherCoders() throws {
        let task = TodoTask(title: "t", completed: true)
        task.id = "task-7"
        let json = try JSONEncoder().encode(task)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["id"] as? String == "task-7")
        let decoded = try JSONDecoder().decode(TodoTask.self, from: json)
        #expect(decoded.id == "task-7")
        #expect(decoded.completed == true)
        // A missing id key is a nil id, as for an optional.
        let noID = try JSONDecoder().decode(TodoTask.self, from: Data(#"{"title":"x"}"#.utf8))
        #expect(noID.id == nil)
        #expect(try boundRevision(of: noID) == nil)
    }
}

/// A superclass model, and subclasses encoding it two ways.
class Animal: Codable {
    @DocumentID var id: String?
    var name: String

    init(name: String) { self.name = name }
}

final class Dog: Animal {
    var breed: String
    private enum Keys: String, CodingKey { case breed }

    init(name: String, breed: String) {
        self.breed = breed
        super.init(name: name)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        breed = try container.decode(String.self, forKey: .breed)
        try super.init(from: container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(breed, forKey: .breed)
        try super.encode(to: container.superEncoder())
    }
}

final class Cat: Animal {
    var lives: Int
    private enum Keys: String, CodingKey { case lives }

    init(name: String, lives: Int) {
        self.lives = lives
        super.init(name: name)
    }

    required init(from decoder: any Decoder) throws {
        lives = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .lives)
        try super.init(from: decoder)
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(lives, forKey: .lives)
        try super.encode(to: encoder)
    }
}
