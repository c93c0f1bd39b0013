import Foundation

/// Seed inputs for the fuzz targets, made from the test fixtures (`Tests/CouchetteTests/Fixtures`):
/// the JSON-lines documents and the requests and documents of the CouchDB transcripts, in the
/// layout each target reads. Query seeds come from the test sources (see `scripts/fuzz`).
extension FuzzHarness {
    /// The seeds for `target` from the fixtures folder `fixtures`; unreadable files are skipped.
    package static func seeds(for target: FuzzTarget, fixtures: String) -> [[UInt8]] {
        let lines = dataLines(fixtures)
        let exchanges = transcriptRequests(fixtures)
        switch target {
        case .query:
            return []
        case .json:
            return lines.map { Array($0.utf8) } + exchanges.compactMap { $0.body.map { Array(JSON.string(from: $0).utf8) } }
        case .binary:
            return lines.compactMap { try? JSON.encodeBinary($0) }
        case .listener:
            return exchanges.map { exchange in
                var text = "\(exchange.method) \(exchange.target)\n"
                for (name, value) in exchange.headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\n" }
                text += "\n"
                return Array(text.utf8) + exchange.rawBody
            }
        case .multipart:
            // Each body whole and cut short at fifteen points (the error paths of a body that ends early).
            return exchanges.flatMap { exchange -> [[UInt8]] in
                guard let type = exchange.headers["Content-Type"], type.hasPrefix("multipart/related") else { return [] }
                let body = exchange.rawBody
                return (1...16).map { Array((type + "\n").utf8) + body.prefix(body.count * $0 / 16) }
            }
        case .document:
            var documents = exchanges.flatMap { exchange -> [Value] in
                guard case .array(let docs)? = exchange.body?["docs"] else { return [] }
                return docs
            }
            for (index, line) in lines.prefix(40).enumerated() {
                guard case .dictionary(var object)? = try? JSON.parse(line) else { continue }
                object["_id"] = .string("doc\(index)")
                let parent = String(repeating: "a", count: 32)
                let revisionID = "2-" + RevisionID.hex(RevisionID.md5(Array(line.utf8)))
                object["_rev"] = .string(revisionID)
                object["_revisions"] = .dictionary([
                    "start": .int(2), "ids": .array([.string(String(RevisionID.digest(of: revisionID))), .string(parent)]),
                ])
                documents.append(.dictionary(object))
            }
            return documents.map { Array(JSON.string(from: $0).utf8) }
        }
    }

    /// A request as a transcript records it, with the database renamed to the harness's `db`.
    private struct RecordedRequest {
        var method: String
        var target: String
        var headers: [String: String]
        var body: Value?
        var rawBody: [UInt8]
    }

    private static func dataLines(_ fixtures: String) -> [String] {
        let folder = fixtures + "/data"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.filter { $0.hasSuffix(".json") }.sorted() ?? []
        return files.flatMap { file -> [String] in
            guard let text = try? String(contentsOfFile: folder + "/" + file, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map(String.init)
        }
    }

    private static func transcriptRequests(_ fixtures: String) -> [RecordedRequest] {
        let folder = fixtures + "/couchdb-transcripts"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.filter { $0.hasSuffix(".json") }.sorted() ?? []
        return files.flatMap { file -> [RecordedRequest] in
            guard let text = try? String(contentsOfFile: folder + "/" + file, encoding: .utf8),
                case .array(let exchanges)? = (try? JSON.parse(text))?["exchanges"]
            else { return [] }
            return exchanges.compactMap { exchange in
                guard let request = exchange["request"], case .string(let method)? = request["method"],
                    case .string(let path)? = request["path"]
                else { return nil }
                var headers: [String: String] = [:]
                if case .dictionary(let recorded)? = request["headers"] {
                    for case (let name, .string(let value)) in recorded { headers[name] = value }
                }
                var body: Value?
                var rawBody: [UInt8] = []
                switch request["body"] {
                case .string(let text)?:
                    if case .string("base64")? = request["body_encoding"], let data = Data(base64Encoded: text) {
                        rawBody = Array(data)
                    } else {
                        rawBody = Array(text.utf8)
                    }
                case let value?:
                    body = value
                    rawBody = Array(JSON.string(from: value).utf8)
                case nil:
                    break
                }
                return RecordedRequest(method: method, target: renamingDatabase(path), headers: headers, body: body, rawBody: rawBody)
            }
        }
    }

    /// `/src/_changes?…` → `/db/_changes?…`; server endpoints (`/_session`) stay.
    private static func renamingDatabase(_ path: String) -> String {
        let trimmed = path.drop(while: { $0 == "/" })
        guard let first = trimmed.split(separator: "/", maxSplits: 1).first, !first.hasPrefix("_") else { return path }
        let name = first.split(separator: "?", maxSplits: 1)[0]
        return "/db" + trimmed.dropFirst(name.count)
    }
}
