// The keyed and unkeyed containers of ``ModelEncoder``.

// MARK: - Keyed

struct ModelKeyedEncodingContainer<Key: CodingKey>: ExplicitNullKeyedContainer {
    let encoder: ModelEncoder
    let dictionary: PendingDictionary
    let codingPath: [any CodingKey]

    private func store(_ value: Value, _ key: Key) {
        dictionary.set(.value(value), forKey: key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws { store(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { store(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { store(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { store(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { store(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { store(.int(value), key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws {
        store(try encoder.context.integer(value, at: codingPath, key: key), key)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws { store(try encoder.context.integer(value, at: codingPath, key: key), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { store(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        store(try encoder.context.integer(value, at: codingPath, key: key), key)
    }
    mutating func encode(_ value: UInt128, forKey key: Key) throws {
        store(try encoder.context.integer(value, at: codingPath, key: key), key)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if T.self == DocumentID.self, encoder.isDocumentRoot {
            // The model's own id is the document's id, not a property.
            encoder.context.noteDocumentID(same(value, as: DocumentID.self))
            return
        }
        dictionary.set(try encoder.box(value, at: codingPath, key: key), forKey: key.stringValue)
    }

    // encodeIfPresent: ExplicitNullKeyedContainer writes nil optionals as explicit nulls.

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = PendingDictionary(keyType: ObjectIdentifier(NestedKey.self))
        dictionary.set(.dictionary(nested), forKey: key.stringValue)
        return KeyedEncodingContainer(
            ModelKeyedEncodingContainer<NestedKey>(
                encoder: encoder.nested(), dictionary: nested,
                codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = PendingArray()
        dictionary.set(.array(nested), forKey: key.stringValue)
        return ModelUnkeyedEncodingContainer(encoder: encoder.nested(), array: nested, codingPath: codingPath + [key])
    }

    /// An encoder for the superclass, writing under `"super"`. At the model's root it is still the
    /// model's root: a `@DocumentID` declared in the superclass is the document's id.
    mutating func superEncoder() -> any Encoder {
        superEncoder(named: CodingPath.superKey)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key)
    }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let child = ModelEncoder(codingPath: codingPath + [key], context: encoder.context, isDocumentRoot: encoder.isDocumentRoot)
        dictionary.set(.encoder(child), forKey: key.stringValue)
        return child
    }
}

// MARK: - Unkeyed

struct ModelUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: ModelEncoder
    let array: PendingArray
    let codingPath: [any CodingKey]

    var count: Int { array.elements.count }

    private var nextKey: CodingPath.IndexKey { CodingPath.IndexKey(array.elements.count) }

    private func append(_ value: Value) {
        array.elements.append(.value(value))
    }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(.double(value)) }
    mutating func encode(_ value: Float) throws { append(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: Int128) throws { append(try encoder.context.integer(value, at: codingPath, key: nextKey)) }
    mutating func encode(_ value: UInt) throws { append(try encoder.context.integer(value, at: codingPath, key: nextKey)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(try encoder.context.integer(value, at: codingPath, key: nextKey)) }
    mutating func encode(_ value: UInt128) throws { append(try encoder.context.integer(value, at: codingPath, key: nextKey)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try encoder.box(value, at: codingPath, key: nextKey))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = nextKey
        let nested = PendingDictionary(keyType: ObjectIdentifier(NestedKey.self))
        array.elements.append(.dictionary(nested))
        return KeyedEncodingContainer(
            ModelKeyedEncodingContainer<NestedKey>(
                encoder: encoder, dictionary: nested,
                codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = nextKey
        let nested = PendingArray()
        array.elements.append(.array(nested))
        return ModelUnkeyedEncodingContainer(encoder: encoder, array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let child = ModelEncoder(codingPath: codingPath + [nextKey], context: encoder.context, isDocumentRoot: false)
        array.elements.append(.encoder(child))
        return child
    }
}
