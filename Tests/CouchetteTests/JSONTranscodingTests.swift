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
        // Keys out of order at every level, repeated out of order, and escaped (the copying path).
        #"{"z":1,"a":{"y":[{"q":1,"b":2}],"c":null},"m":"x"}"#,
        #"{"b":1,"a":2,"b":3,"a":4}"#,
        #"{"a\"b":"c\\d","a":"\u00e9\n","\u0041":[true]}"#,
        #"["\ud83d\ude00 tail","head \t",""]"#,
        #"{"":1,"a":2}"#, #"{"a":2,"":1}"#, #"{"ab":1,"a":2}"#,
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

    @Test func largeContainersStayWideAndStillMatch() async throws {
        try await onAThreadOfItsOwn {
            let big = "{\"list\":[" + (0..<9000).map { "\"item-\($0)\"" }.joined(separator: ",") + "],\"n\":1}"
            let bytes = try JSON.encodeBinary(big)
            #expect(bytes == (try ValueEncoder.encode(JSON.parse(big))))
            #expect(bytes[0] == ValueTag.dictionary)
            #expect(EncodedValue(bytes: bytes).value(forKey: "list")?.element(at: 8999)?.string == "item-8999")
        }
    }

    /// Containers of every size class (narrow, wide), nested in both orders of their keys.
    @Test(arguments: [3, 300, 9000])
    func largeUnsortedContainersMatch(count: Int) async throws {
        try await onAThreadOfItsOwn { () throws in
            let entries = (0..<count).reversed().map { "\"key-\($0)\":[\($0),\"v\($0)\"]" }
            let text =
                "{\"outer\":{" + entries.joined(separator: ",") + "},\"a\":[" + entries.map { "{\($0)}" }.joined(separator: ",") + "]}"
            #expect(try JSON.encodeBinary(text) == ValueEncoder.encode(JSON.parse(text)))
        }
    }

    @Test func theTranscoderReadsBytesInPlace() throws {
        let text = #"{"b":"two","a":[1,2.5,"three"]}"#
        let fromBytes = try Array(text.utf8).withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) }
        #expect(fromBytes == (try JSON.encodeBinary(text)))
        #expect(EncodedValue(bytes: fromBytes).value(forKey: "a")?.element(at: 2)?.string == "three")
    }

    @Test func nestingBeyondTheLimitIsAClearError() {
        let deep = String(repeating: "[", count: JSON.maximumDepth + 1) + String(repeating: "]", count: JSON.maximumDepth + 1)
        #expect {
            try JSON.encodeBinary(deep)
        } throws: { error in
            (error as? CouchetteError)?.code == .invalidParameter && "\(error)".contains("nesting deeper than")
        }
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

    @Test(arguments: [
        #"{"a":}"#, #"[1,]"#, #"{"a" 1}"#, "{\"a\":\"\u{01}\"}", #"{"a":1"#, #"nul"#,
        #"{"a\x":1}"#, #"["ab\"#, #"["ab"#, "[\"a\\n\u{02}\"]", #"{"a":"\ud800"}"#, #"[1] x"#,
    ])
    func malformedJSONFailsTheSameWay(text: String) {
        var binaryError: String?
        var valueError: String?
        do { _ = try JSON.encodeBinary(text) } catch { binaryError = "\(error)" }
        do { _ = try JSON.parse(text) } catch { valueError = "\(error)" }
        #expect(binaryError != nil)
        #expect(binaryError == valueError)
    }

    /// Text past the limit that keeps the binary form's offsets within 32 bits is refused before
    /// anything is allocated or read, on both ways in: one value, and a batch's documents.
    @Test func textOverTheSizeLimitIsRefused() throws {
        // Never written nor read: the size alone is refused (the pages are never touched).
        let text = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: JSON.maximumBinaryInput + 1)
        defer { text.deallocate() }
        let error = #expect(throws: CouchetteError.self) { try JSON.encodeBinary(utf8: UnsafeBufferPointer(text)) }
        #expect(error?.code == .invalidParameter)
        #expect(error?.message.contains("too large to store") == true)
        var sink = BinarySink()
        #expect(throws: CouchetteError.self) { try sink.transcode(UnsafeBufferPointer(text)) }
        text[0] = UInt8(ascii: "1")
        #expect(try JSON.encodeBinary(utf8: UnsafeBufferPointer(rebasing: text[..<1])) == ValueEncoder.encode(.int(1)))
    }
}
