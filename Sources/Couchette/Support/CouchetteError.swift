/// The one error type every Couchette API throws (besides Swift's `DecodingError` from model decoding).
///
/// Every error carries a ``Code`` that programs can switch on and a message that names the input
/// that caused it, so that a log line is enough to find the problem.
///
/// ```swift
/// do {
///     try await collection.purge(id: "missing")
/// } catch let error as CouchetteError where error.code == .notFound {
///     print(error.message)   // "document 'missing' not found in _default._default"
/// }
/// ```
public struct CouchetteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure happened.
    public enum Code: Sendable, Hashable, CustomStringConvertible {
        /// A document, collection or file that the call names does not exist.
        case notFound
        /// A write lost a concurrency-control race (see ``ConcurrencyControl``).
        case conflict
        /// An argument or a stored value is not acceptable (bad name, NaN, unsupported type, …).
        case invalidParameter
        /// A SQL++ query could not be parsed or compiled.
        case invalidQuery
        /// The database was closed, or the collection deleted.
        case notOpen
        /// Another holder of the database prevents the operation (for example compaction).
        case busy
        /// The file is damaged or holds data this version cannot read.
        case corruption
        /// The operating system or the storage engine reported an I/O failure.
        case io
        /// The database reached its maximum size (``DatabaseConfiguration/maximumSize``) or the disk
        /// is full. Nothing committed is lost; deleting or purging documents and compacting make
        /// room again.
        case full
        /// The operation is not supported here.
        case unsupported
        /// The peer refused the credentials.
        case unauthorized
        /// An HTTP peer answered with this status.
        case http(status: Int)
        /// A TLS certificate was refused (untrusted, wrong pin, expired, client certificate
        /// refused) or a TLS identity could not be made. Never retried.
        case tls

        /// The case's name, such as `notFound` or `http(404)`.
        public var description: String {
            switch self {
            case .notFound: "notFound"
            case .conflict: "conflict"
            case .invalidParameter: "invalidParameter"
            case .invalidQuery: "invalidQuery"
            case .notOpen: "notOpen"
            case .busy: "busy"
            case .corruption: "corruption"
            case .io: "io"
            case .full: "full"
            case .unsupported: "unsupported"
            case .unauthorized: "unauthorized"
            case .http(let status): "http(\(status))"
            case .tls: "tls"
            }
        }
    }

    /// What kind of failure this is: switch on it, since messages may change.
    public let code: Code
    /// A human-readable explanation that names the offending input.
    public let message: String

    /// An error of kind `code`; your own code may throw one too, for example a conflict handler
    /// that gives up (the save rethrows it).
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `CouchetteError.<code>: <message>`, for logs.
    public var description: String { "CouchetteError.\(code): \(message)" }
}
