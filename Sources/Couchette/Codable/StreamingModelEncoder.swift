import Foundation

/// The encoders a document encoder hands to `encode(to:)` (``StreamingModelEncoder`` and the
/// buffered ``ModelEncoder``): what `@DocumentID` needs to know to stay out of the body.
protocol DocumentModelEncoder: AnyObject {
    /// True for the encoder of the model itself and the super-encoders it hands out: a
    /// `@DocumentID` met here is the document's id and is not written.
    var isDocumentRoot: Bool { get }
    var context: EncodingContext { get }
}

/// The `Encoder` of the streaming document encoder (see ``BodyStream``); also its own
/// single-value container.
final class StreamingModelEncoder: Encoder, DocumentModelEncoder {
    let codingPath: [any CodingKey]
    let stream: BodyStream
    let isDocumentRoot: Bool
    var context: EncodingContext { stream.context }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// What this encoder's value became.
    enum State {
        /// Nothing yet: its place in the stream waits (an empty dictionary if nothing comes).
        case pending(BodyStream.Position)
        case keyed(BodyStream.Position)
        case unkeyed(BodyStream.Position)
        /// A single value, written.
        case single
    }
    private(set) var state: State

    init(stream: BodyStream, position: BodyStream.Position, codingPath: [any CodingKey], isDocumentRoot: Bool) {
        self.stream = stream
        self.codingPath = codingPath
        self.isDocumentRoot = isDocumentRoot
        state = .pending(position)
    }

    /// Where this encoder's value is, for closing it when `encode(to:)` returns.
    var position: BodyStream.Position {
        switch state {
        case .pending(let position), .keyed(let position), .unkeyed(let position): position
        case .single: .dead
        }
    }

    /// Whether the value is a dictionary so far (what a document's root must be).
    var isDictionary: Bool {
        switch state {
        case .pending, .keyed: true
        case .unkeyed, .single: false
        }
    }

    // MARK: - Containers

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(
            StreamingKeyedContainer<Key>(
                stream: stream, position: containerPosition(.dictionary), codingPath: codingPath, isDocumentRoot: isDocumentRoot))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        StreamingUnkeyedContainer(
            stream: stream, position: containerPosition(.array), codingPath: codingPath, isDocumentRoot: isDocumentRoot)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    /// The container of `kind` this encoder's value becomes, or already is (a superclass asking for
    /// its subclass's container again shares it).
    private func containerPosition(_ kind: BodyStream.Kind) -> BodyStream.Position {
        switch (state, kind) {
        case (.pending(let position), _):
            guard stream.becomeContainer(position, kind) else { return .dead }
            state = kind == .dictionary ? .keyed(position) : .unkeyed(position)
            return position
        case (.keyed(let position), .dictionary), (.unkeyed(let position), .array):
            if !stream.isOpen(position) { stream.misuse() }  // revisited after its parent moved on
            return position
        default:
            stream.misuse()  // another kind of value was encoded here: the buffered encoder reports it
            return .dead
        }
    }

    /// Starts this encoder's single value.
    private func beginValue() -> Bool {
        guard case .pending(let position) = state else {
            stream.misuse()  // a second value, or a container already
            return false
        }
        guard stream.takeValue(position) else { return false }
        state = .single
        return true
    }
}

// MARK: - Single value container

extension StreamingModelEncoder: SingleValueEncodingContainer {
    func encodeNil() throws { if beginValue() { stream.writeNull() } }
    func encode(_ value: Bool) throws { if beginValue() { stream.write(value) } }
    func encode(_ value: String) throws { if beginValue() { stream.write(value) } }
    func encode(_ value: Double) throws { if beginValue() { stream.write(value) } }
    func encode(_ value: Float) throws { if beginValue() { stream.write(Double(value)) } }
    func encode(_ value: Int) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: Int8) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: Int16) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: Int32) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: Int64) throws { if beginValue() { stream.write(value) } }
    func encode(_ value: Int128) throws { try encodeInteger(value) }
    func encode(_ value: UInt) throws { try encodeInteger(value) }
    func encode(_ value: UInt8) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: UInt16) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: UInt32) throws { if beginValue() { stream.write(Int64(value)) } }
    func encode(_ value: UInt64) throws { try encodeInteger(value) }
    func encode(_ value: UInt128) throws { try encodeInteger(value) }

    private func encodeInteger<T: BinaryInteger>(_ value: T) throws {
        let stored = try context.integer(value, at: codingPath, key: nil)
        if beginValue() { stream.write(stored) }
    }

    func encode<T: Encodable>(_ value: T) throws {
        if T.self == DocumentID.self, isDocumentRoot {
            context.noteDocumentID(same(value, as: DocumentID.self))
            return
        }
        if beginValue() { try stream.encode(value, at: codingPath, key: nil) }
    }
}
