import Foundation
import Testing

@testable import Couchette

/// `setDate` keeps the date itself (`MutableSlot.date`) and formats it only when the document is
/// encoded or read: every form of the document must be what storing its ISO-8601 text gives.
@Suite struct MutableDateSlotTests {
    private static let dates = [1_709_649_015.25, 0, -0.5, 951_782_400.001, 253_402_300_799.999, -62_167_219_200].map {
        Date(timeIntervalSince1970: $0)
    }

    @Test func aDateIsKeptUnformattedUntilEncoded() throws {
        let document = MutableDocument(id: "d").setDate(Self.dates[0], forKey: "when")
        let slot = try #require(document.root.changedEntries.first?.slot)
        guard case .date(let kept) = slot else {
            Issue.record("setDate stored \(slot), not the date")
            return
        }
        #expect(kept == Self.dates[0])
    }

    @Test func everyFormIsTheTextsForm() async throws {
        for date in Self.dates {
            let text = ISO8601.string(from: date)
            let byDate = MutableDocument(id: "d").setDate(date, forKey: "when").setInt(1, forKey: "n")
            let byText = MutableDocument(id: "d").setString(text, forKey: "when").setInt(1, forKey: "n")
            #expect(try byDate.encodeBody() == byText.encodeBody(), "\(text)")
            #expect(byDate.value(forKey: "when") as? String == text)
            #expect(byDate.toDictionary() as NSDictionary == byText.toDictionary() as NSDictionary)
            #expect(byDate.toMutable().string(forKey: "when") == text)
            if case .value(let converted) = byDate.root.toValue(), case .value(let expected) = byText.root.toValue() {
                #expect(converted == expected)
            } else {
                Issue.record("\(text) did not convert")
            }
            let nested = MutableDocument(id: "n").setDictionary(MutableDictionaryObject().setDate(date, forKey: "at"), forKey: "inner")
            #expect(nested.dictionary(forKey: "inner")?.string(forKey: "at") == text)
        }
    }

    @Test func aStoredDateReplacedByADateIsPatchedAsTextWouldBe() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setDate(Self.dates[0], forKey: "when").setString("x", forKey: "s"))
            let edited = try #require(try await collection.document(id: "d")).toMutable().setDate(Self.dates[1], forKey: "when")
            let expected = MutableDocument(id: "d").setString(ISO8601.string(from: Self.dates[1]), forKey: "when").setString(
                "x", forKey: "s")
            #expect(try edited.encodeBody() == expected.encodeBody())
            try await collection.save(document: edited)
            #expect(try await collection.document(id: "d")?.string(forKey: "when") == ISO8601.string(from: Self.dates[1]))
        }
    }
}
