import Foundation
import Testing

@testable import Couchette

/// ``MultipartReader`` and ``GzipDecoder``, the readers of multipart bodies peers send: the same
/// events whatever the pieces the body arrives in, and a clear error for every broken rule.
@Suite(.tags(.sanitizeAddress)) struct MultipartReaderTests {
    private let body = Array(
        ("preamble\r\n--b0und\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n--b0und\r\n\r\n"
            + "x\r\n--b0un not yet\r\n--b0und  \r\nContent-Disposition: attachment; filename=\"f\"\r\n\r\n\r\n--b0und--\r\nepilogue").utf8)

    /// Events with adjacent data joined, so feeding in different pieces compares equal.
    private func events(_ pieces: [ArraySlice<UInt8>]) throws -> [MultipartReader.Event] {
        var reader = try MultipartReader(contentType: "multipart/related; boundary=\"b0und\"")
        var all: [MultipartReader.Event] = []
        for piece in pieces {
            for event in try reader.feed(piece) {
                if case .data(let more) = event, case .data(let before)? = all.last {
                    all[all.count - 1] = .data(before + more)
                } else {
                    all.append(event)
                }
            }
        }
        try reader.finish()
        return all
    }

    @Test func partsAreTheSameWhateverPiecesTheBodyComesIn() throws {
        let whole = try events([body[...]])
        #expect(
            whole == [
                .part(headers: ["content-type": "application/json"]), .data(Data("{\"a\":1}".utf8)), .partEnd,
                .part(headers: [:]), .data(Data("x\r\n--b0un not yet".utf8)), .partEnd,
                .part(headers: ["content-disposition": "attachment; filename=\"f\""]), .partEnd, .end,
            ])
        for size in 1...9 {
            let pieces = stride(from: 0, to: body.count, by: size).map { body[$0..<min($0 + size, body.count)] }
            #expect(try events(pieces) == whole, "pieces of \(size)")
        }
    }

    @Test func brokenBodiesThrowAClearError() throws {
        let cases: [(String, String)] = [
            ("--b0und\r\n\r\nno closing boundary", "without its closing boundary"),
            ("--b0und\r\nno-colon-here\r\n\r\nx\r\n--b0und--", "has no ':'"),
            ("--b0undX\r\n\r\nx\r\n--b0und--", "not followed by a line break"),
            ("--b0und\r\n" + String(repeating: "h: v\r\n", count: 4000) + "\r\nx\r\n--b0und--", "headers are longer"),
            (String(repeating: "no boundary ", count: 10_000), "no boundary"),
        ]
        for (text, message) in cases {
            #expect(throws: CouchetteError.self, "\(message)") { _ = try events([Array(text.utf8)[...]]) }
            do {
                _ = try events([Array(text.utf8)[...]])
            } catch let error as CouchetteError {
                #expect(error.code == .invalidParameter && error.message.contains(message), "\(error.message)")
            }
        }
        for type in [
            "application/json", "multipart/related", "multipart/related; boundary=\"\"",
            "multipart/mixed; boundary=" + String(repeating: "x", count: 71),
        ] {
            #expect(throws: CouchetteError.self, "\(type)") { _ = try MultipartReader(contentType: type) }
        }
    }

    @Test func gzipIsDecodedWithinItsDeclaredLength() throws {
        // "hello hello hello\n" gzipped by gzip(1).
        let compressed = Data(base64Encoded: "H4sIAAAAAAAAA8tIzcnJV8hAkFwAO3yK3xIAAAA=")!
        var plain = Data()
        let decoder = try GzipDecoder(maximumOutput: 18)
        for byte in compressed { try decoder.decode(Data([byte])) { plain += $0 } }
        try decoder.finish()
        #expect(plain == Data("hello hello hello\n".utf8))
        // Output past the declared length (a gzip bomb) and garbage are refused.
        #expect(throws: CouchetteError.self) { try GzipDecoder(maximumOutput: 10).decode(compressed) { _ in } }
        #expect(throws: CouchetteError.self) { try GzipDecoder(maximumOutput: 100).decode(Data("not gzip at all".utf8)) { _ in } }
        let truncated = try GzipDecoder(maximumOutput: 100)
        try truncated.decode(compressed.prefix(10)) { _ in }
        #expect(throws: CouchetteError.self) { try truncated.finish() }
    }
}
