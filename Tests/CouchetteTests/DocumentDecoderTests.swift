import Foundation
import Testing

@testable import Couchette

@Suite struct DocumentDecoderTests {
    struct Event: Codable { var at: Date }
    struct Small: Codable { var small: Int16 }
    struct Unsigned: Codable { var count: UInt8 }
    struct Whole: Codable { var n: Int }
    struct Single: Codable { var value: Float }
    struct Contacts: Codable { var name: String; var contacts: [String] }
    struct Optionals: Codable { var a: String?; var b: Int?; var c: [Int]? }
    struct Required: Codable { var title: String; var done: Bool }
    struct Links: Codable { var url: URL; var uuid: UUID }

    /// The coding path of a decoding error, as key names.
    private func path(of error: DecodingError) -> [String] {
        let context: DecodingError.Context? =
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): context
            case .keyNotFound(let key, let context):
                DecodingError.Context(
                    codingPath: context.codingPath + [key],
                    debugDescription: context.debugDescription)
            @unknown default: nil
            }
        return context?.codingPath.map(\.stringValue) ?? []
    }

    // MARK: - Dates

    @Test(arguments: [
        ("2023-11-14T22:13:20.123Z", 1_700_000_000.123),
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14T23:13:20.123+01:00", 1_700_000_000.123),
        ("2023-11-14T17:13:20-05:00", 1_700_000_000.0),
        ("2023-11-14T22:13:20.123456Z", 1_700_000_000.123456),
        ("2023-11-14", 1_699_920_000.0),
    ])
    func datesDecodeFromSeveralISOForms(text: String, seconds: Double) throws {
        let event = try decodeStored(Event.self, json: #"{"at": "\#(text)"}"#)
        #expect(abs(event.at.timeIntervalSince1970 - seconds) < 0.000_01, "\(text)")
    }

    @Test func datesAreWrittenWithMillisecondsInUTC() throws {
        final class Stamp: Codable {
            @DocumentID var id: String?
            var at = Date(timeIntervalSince1970: 86_400 * 365 + 0.5)
        }
        #expect(try storedProperties(of: Stamp())["at"] == .string("1971-01-01T00:00:00.500Z"))
    }

    @Test func aMalformedDateIsDataCorrupted() throws {
        let error = try #require(throws: DecodingError.self) { _ = try decodeStored(Event.self, json: #"{"at": "yesterday"}"#) }
        guard case .dataCorrupted = error else { Issue.record("\(error)"); return }
        #expect(path(of: error) == ["at"])
    }

    // MARK: - Numbers

    @Test func integersAreRangeCheckedOnDecode() throws {
        let error = try #require(throws: DecodingError.self) {
            _ = try decodeStored(Small.self, json: #"{"small": 9223372036854775807}"#)
        }
        guard case .dataCorrupted(let context) = error else { Issue.record("\(error)"); return }
        #expect(path(of: error) == ["small"])
        #expect(context.debugDescription.contains("Int16"))
        #expect(throws: DecodingError.self) { _ = try decodeStored(Unsigned.self, json: #"{"count": -1}"#) }
        #expect(throws: DecodingError.self) { _ = try decodeStored(Unsigned.self, json: #"{"count": 256}"#) }
        #expect(try decodeStored(Unsigned.self, json: #"{"count": 255}"#).count == 255)
    }

    @Test func integralDoublesDecodeAsIntegersButFractionsDoNot() throws {
        #expect(try decodeStored(Whole.self, json: #"{"n": 3.0}"#).n == 3)
        #expect(throws: DecodingError.self) { _ = try decodeStored(Whole.self, json: #"{"n": 3.5}"#) }
    }

    @Test func floatsAreRangeChecked() throws {
        #expect(try decodeStored(Single.self, json: #"{"value": 2}"#).value == 2)
        #expect(throws: DecodingError.self) { _ = try decodeStored(Single.self, json: #"{"value": 1e300}"#) }
    }

    // MARK: - Shape mismatches

    @Test func aSchemaMismatchIsATypeMismatchWithItsCodingPath() throws {
        let error = try #require(throws: DecodingError.self) {
            _ = try decodeStored(Contacts.self, json: #"{"name": "Ada", "contacts": 5}"#)
        }
        guard case .typeMismatch = error else { Issue.record("\(error)"); return }
        #expect(path(of: error) == ["contacts"])
    }

    @Test func aWrongElementNamesItsIndex() throws {
        let error = try #require(throws: DecodingError.self) {
            _ = try decodeStored(Contacts.self, json: #"{"name": "Ada", "contacts": ["a", 2]}"#)
        }
        guard case .typeMismatch = error else { Issue.record("\(error)"); return }
        #expect(path(of: error) == ["contacts", "Index 1"])
    }

    @Test func aMissingNonOptionalIsKeyNotFound() throws {
        let error = try #require(throws: DecodingError.self) { _ = try decodeStored(Required.self, json: #"{"title": "x"}"#) }
        guard case .keyNotFound(let key, _) = error else { Issue.record("\(error)"); return }
        #expect(key.stringValue == "done")
    }

    @Test func aNullNonOptionalIsValueNotFound() throws {
        let error = try #require(throws: DecodingError.self) {
            _ = try decodeStored(Required.self, json: #"{"title": null, "done": true}"#)
        }
        guard case .valueNotFound = error else { Issue.record("\(error)"); return }
        #expect(path(of: error) == ["title"])
    }

    @Test func optionalsReadMissingKeysAndNullsAsNil() throws {
        let missing = try decodeStored(Optionals.self, json: "{}")
        #expect(missing.a == nil && missing.b == nil && missing.c == nil)
        let nulls = try decodeStored(Optionals.self, json: #"{"a": null, "b": null, "c": null}"#)
        #expect(nulls.a == nil && nulls.b == nil && nulls.c == nil)
        let present = try decodeStored(Optionals.self, json: #"{"a": "x", "b": 2, "c": [1]}"#)
        #expect(present.a == "x" && present.b == 2 && present.c == [1])
        // Present but of the wrong kind is still an error.
        #expect(throws: DecodingError.self) { _ = try decodeStored(Optionals.self, json: #"{"b": "two"}"#) }
    }

    @Test func urlsAndUUIDsAreValidated() throws {
        let uuid = UUID()
        let links = try decodeStored(Links.self, json: #"{"url": "https://example.com/x", "uuid": "\#(uuid.uuidString)"}"#)
        #expect(links.url.absoluteString == "https://example.com/x")
        #expect(links.uuid == uuid)
        #expect(throws: DecodingError.self) {
            _ = try decodeStored(Links.self, json: #"{"url": "https://example.com", "uuid": "not-a-uuid"}"#)
        }
    }

    @Test func enumsDecodeByRawValue() throws {
        struct Flags: Codable {
            var priority: EveryType.Priority
            var status: EveryType.Status
        }
        let flags = try decodeStored(Flags.self, json: #"{"priority": 1, "status": "open"}"#)
        #expect(flags.priority == .low)
        #expect(flags.status == .open)
        #expect(throws: DecodingError.self) { _ = try decodeStored(Flags.self, json: #"{"priority": 2, "status": "open"}"#) }
    }

    @Test func nestedModelsReadTheirIdFromTheirField() throws {
        let person = try decodeStored(
            Person.self,
            json: """
                {"name": "Ada", "contacts": [{"id": "c1", "name": "Bob"}, {"name": "Cy", "id": null}],
                 "best": {"id": "c9", "name": "Di"}, "byRole": {"boss": {"id": "c2", "name": "Eve"}}}
                """)
        #expect(person.contacts.map(\.id) == ["c1", nil])
        #expect(person.best?.id == "c9")
        #expect(person.byRole["boss"]?.id == "c2")
        // Nested models are values, not bound to a revision of their own.
        #expect(try boundRevision(of: person.contacts[0]) == nil)
    }

    @Test func theRootIdComesFromTheDocumentNotTheBody() throws {
        let body = try ValueEncoder.encode(JSON.parse(#"{"id": "from-body", "title": "t"}"#))
        let task = try DocumentDecoder.decodeModel(
            TodoTask.self,
            from: Document(id: "doc-1", revisionID: "3-abc", sequence: 3, body: body))
        #expect(task.id == "doc-1")
        #expect(try boundRevision(of: task) == "3-abc")
    }

    @Test func aHandWrittenInitStillGetsItsDocumentID() throws {
        final class Manual: Codable {
            @DocumentID var id: String?
            var title: String
            private enum Keys: CodingKey { case title }
            init(from decoder: any Decoder) throws {
                title = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .title)
            }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(title, forKey: .title)
            }
        }
        let body = try ValueEncoder.encode(JSON.parse(#"{"title": "t"}"#))
        let manual = try DocumentDecoder.decodeModel(Manual.self, from: Document(id: "m", revisionID: "1-a", sequence: 1, body: body))
        #expect(manual.id == "m")
        #expect(try boundRevision(of: manual) == "1-a")
        // Encoding finds the wrapper by reflection too.
        let write = try ModelWrite(saving: manual)
        #expect(write.reference.id == "m")
        #expect(write.reference.base == "1-a")
    }
}
