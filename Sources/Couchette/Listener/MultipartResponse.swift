extension HTTPResponse {
    /// A `multipart/mixed` body of JSON parts, as CouchDB answers `open_revs`: each part is
    /// `--boundary`, its `Content-Type`, a blank line and the JSON; the CRLF before each
    /// delimiter belongs to the delimiter (RFC 2046). The boundary is random, so no JSON text
    /// can contain it by chance.
    static func multipartMixed(_ parts: [(contentType: String, json: Value)]) -> HTTPResponse {
        var generator = SystemRandomNumberGenerator()
        let boundary = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
        var body: [UInt8] = []
        for part in parts {
            body += Array("--\(boundary)\r\nContent-Type: \(part.contentType)\r\n\r\n".utf8)
            body += Array(JSON.string(from: part.json).utf8)
            body += Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        return HTTPResponse(status: 200, headers: [("Content-Type", "multipart/mixed; boundary=\"\(boundary)\"")], body: .bytes(body))
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
