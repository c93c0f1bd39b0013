import Foundation

@testable import Couchette

/// One captured CouchDB exchange of `Fixtures/couchdb-transcripts` (see its README).
struct TranscriptExchange: Sendable {
    let seq: Int
    let actor: String
    let method: String
    /// The path with its query string, as sent.
    let path: String
    let requestHeaders: [String: String]
    /// The request body: JSON text, or the raw text/bytes of a non-JSON body.
    let requestBody: [UInt8]?
    let status: Int
    /// The response body when it was JSON.
    let responseJSON: Value?
    /// The response body's bytes (JSON re-serialized, text, or decoded base64).
    let responseBody: [UInt8]?
    let responseHeaders: [String: String]
    /// The response chunks with their arrival times (ms after the request), when recorded.
    let chunks: [(milliseconds: Double, data: [UInt8])]

    /// The path without its query string, percent-decoded.
    var route: String { String(path.split(separator: "?", maxSplits: 1)[0]).removingPercentEncoding ?? path }
    /// The query string (still encoded), or "".
    var query: String { path.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? "" }
    var requestJSON: Value? { requestBody.flatMap { try? JSON.parse(String(decoding: $0, as: UTF8.self)) } }
}

/// A transcript file: its exchanges in request order.
enum Transcript {
    static func load(_ name: String) throws -> [TranscriptExchange] {
        let text = try String(contentsOfFile: Fixtures.path("couchdb-transcripts/\(name).json"), encoding: .utf8)
        guard case .array(let exchanges)? = try JSON.parse(text)["exchanges"] else { return [] }
        return exchanges.map { exchange in
            let request = exchange["request"] ?? .null
            let response = exchange["response"] ?? .null
            let responseJSON: Value? = if let body = response["body"], response["body_encoding"] == nil { body } else { nil }
            var chunks: [(Double, [UInt8])] = []
            if case .array(let list)? = response["chunks"] {
                for chunk in list where chunk["last_chunk"] == nil {
                    let time = number(chunk["t_ms"])
                    if case .string(let data)? = chunk["data"] { chunks.append((time, Array(data.utf8))) }
                    if case .string(let data)? = chunk["data_base64"] { chunks.append((time, Array(Data(base64Encoded: data) ?? Data()))) }
                }
            }
            return TranscriptExchange(
                seq: Int(number(exchange["seq"])), actor: string(exchange["actor"]), method: string(request["method"]),
                path: string(request["path"]), requestHeaders: headers(request["headers"]), requestBody: body(request),
                status: Int(number(response["status"])), responseJSON: responseJSON, responseBody: body(response),
                responseHeaders: headers(response["headers"]), chunks: chunks)
        }
    }

    private static func body(_ message: Value) -> [UInt8]? {
        guard let body = message["body"], body != .null else { return nil }
        switch message["body_encoding"] {
        case .string("base64")?: if case .string(let text) = body { return Array(Data(base64Encoded: text) ?? Data()) }
        case .string("utf8")?: if case .string(let text) = body { return Array(text.utf8) }
        default: break
        }
        if case .string(let raw)? = message["body_raw"] { return Array(raw.utf8) }
        return Array(JSON.string(from: body).utf8)
    }

    private static func headers(_ value: Value?) -> [String: String] {
        guard case .dictionary(let object)? = value else { return [:] }
        return object.compactMapValues { if case .string(let text) = $0 { text } else { nil } }
    }

    private static func string(_ value: Value?) -> String {
        if case .string(let text)? = value { return text }
        return ""
    }

    private static func number(_ value: Value?) -> Double {
        switch value {
        case .int(let number)?: Double(number)
        case .double(let number)?: number
        default: 0
        }
    }
}

/// Sends a transcript's request to `base` (the listener under test): its method, path (with
/// `path` replaced when given), body bytes, content headers, and `cookie` as its `Cookie`.
func replay(
    _ exchange: TranscriptExchange, to base: String, path: String? = nil, body: [UInt8]? = nil,
    cookie: String? = nil
) async throws -> HTTPReply {
    var request = HTTPClientRequest(method: exchange.method, url: base + (path ?? exchange.path))
    request.idleTimeout = .seconds(30)
    if let cookie { request.headers.append(("Cookie", cookie)) }
    for (name, value) in exchange.requestHeaders where ["content-type", "accept", "x-couch-full-commit"].contains(name.lowercased()) {
        request.headers.append((name, value))
    }
    if let bytes = body ?? exchange.requestBody { request.body = Data(bytes) }
    let response = try await HTTPClient.shared.data(for: request)
    return HTTPReply(status: response.status, headers: response.headers, text: String(decoding: response.body, as: UTF8.self))
}

/// `document` without the gzip transfer fields (`encoding`, `encoded_length`) of its
/// `_attachments` entries: CouchDB sends compressible attachments gzip-encoded, Couchette sends
/// them as stored, and the rest of an entry must agree.
func withoutGzipTransferFields(_ document: Value) -> Value {
    guard case .dictionary(var object) = document, case .dictionary(var entries)? = object["_attachments"] else { return document }
    for (name, entry) in entries {
        guard case .dictionary(var fields) = entry else { continue }
        fields["encoding"] = nil
        fields["encoded_length"] = nil
        entries[name] = .dictionary(fields)
    }
    object["_attachments"] = .dictionary(entries)
    return .dictionary(object)
}
