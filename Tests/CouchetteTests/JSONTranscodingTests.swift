import Foundation
import Testing

@testable import Couchette

/// `JSON.encodeBinary` (JSON text straight to the binary format) must give exactly the bytes of
/// parsing to a `Value` and encoding that.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct JSONTranscodingTests {
    static let fixtureData = Fixtures.directory.appendingPathComponent("data")

    static let samples: [String] = [
        #"{}"#, #"[]"#, #"{"a":1}"#, #"[1,"two",3.5,null,true,false]"#,
        #"{"b":{"y":[1,{"z":null}],"x":"é"},"a":[[],{}],"c":-9223372036854775808}"#,
        #"{"dup":1,"other":2,"dup":3}"#,  // the last duplicate wins
        #"{"é":1,"😀":[true],"\u0000":"nul"}"#,
        #"  {"spaced" : [ 1 , 2 ] }  "#,
        #"12"#, #""just a string""#, #"1e3"#, #"18446744073709551616"#,
    ]

    @Test(arguments: samples)
    func transcodingMatchesParseThenEncode(text: String) throws {
        #expect(try JSON.encodeBinary(text) == ValueEncoder.encode(JSON.parse(text)))
    }

    @Test func duplicateKeysKeepTheLastValue() throws {
        let encoded = EncodedValue(bytes: try JSON.encodeBinary(#"{"k":1,"k":2}"#))
        #expect(encoded.count == 1)
        #expect(encoded.value(forKey: "k")?.integer == 2)
    }

    /// Keys are compared by their bytes, as Couchbase Lite's Fleece does; a Swift dictionary would
    /// merge canonically-equivalent keys, so this is the one place the two paths differ.
    @Test func canonicallyEquivalentKeysStayDistinct() throws {
        let encoded = EncodedValue(bytes: try JSON.encodeBinary(#"{"é":1,"e\u0301":2}"#))
        #expect(encoded.count == 2)
        #expect(encoded.value(forKey: "\u{E9}")?.integer == 1)
        #expect(encoded.value(forKey: "e\u{301}")?.integer == 2)
    }

    @Test func largeContainersStayWideAndStillMatch() throws {
        let big = "{\"list\":[" + (0..<9000).map { "\"item-\($0)\"" }.joined(separator: ",") + "],\"n\":1}"
        let bytes = try JSON.encodeBinary(big)
        #expect(bytes == (try ValueEncoder.encode(JSON.parse(big))))
        #expect(bytes[0] == ValueTag.dictionary)
        #expect(EncodedValue(bytes: bytes).value(forKey: "list")?.element(at: 8999)?.string == "item-8999")
    }

    @Test func everyFixtureDocumentTranscodesIdentically() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.fixtureData.path).filter { $0.hasSuffix(".json") }
        try #require(!files.isEmpty, "no fixtures in \(Self.fixtureData.path)")
        var checked = 0
        for file in files {
            let text = try String(contentsOf: Self.fixtureData.appendingPathComponent(file), encoding: .utf8)
            // A file is either one JSON value or JSON lines.
            let values = (try? JSON.parse(text)) != nil ? [Substring(text)] : text.split(separator: "\n")
            for line in values where !line.isEmpty {
                let json = String(line)
                #expect(try JSON.encodeBinary(json) == ValueEncoder.encode(JSON.parse(json)), "\(file): \(json.prefix(60))")
                checked += 1
            }
        }
        #expect(checked >= 250)
    }

    @Test(arguments: [#"{"a":}"#, #"[1,]"#, #"{"a" 1}"#, "{\"a\":\"\u{01}\"}", #"{"a":1"#, #"nul"#])
    func malformedJSONFailsTheSameWay(text: String) {
        var binaryError: String?
        var valueError: String?
        do { _ = try JSON.encodeBinary(text) } catch { binaryError = "\(error)" }
        do { _ = try JSON.parse(text) } catch { valueError = "\(error)" }
        #expect(binaryError != nil)
        #expect(binaryError == valueError)
    }
}
