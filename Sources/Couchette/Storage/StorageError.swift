import CLMDB

#if canImport(Glibc)
import Glibc
#endif

/// Failures from the LMDB layer, before they are translated into ``CouchetteError``.
enum StorageError: Error {
    /// The map is full: the write must be retried after growing it. Never surfaces to users.
    case mapFull
    /// Another process grew the map: adopt its size and retry. Never surfaces to users.
    case mapResized
    /// A write found the environment opened read-only: reopen it for writing and retry. Never
    /// surfaces to users.
    case readOnly
    /// Any other LMDB or system error code.
    case lmdb(code: Int32, operation: String)

    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws {
        switch code {
        case MDB_SUCCESS: return
        case MDB_MAP_FULL: throw StorageError.mapFull
        case MDB_MAP_RESIZED: throw StorageError.mapResized
        default: throw StorageError.lmdb(code: code, operation: operation())
        }
    }

    /// The user-facing form of this failure.
    var couchetteError: CouchetteError {
        switch self {
        case .mapFull, .mapResized:
            return CouchetteError(.io, "storage map could not be resized")
        case .readOnly:
            return CouchetteError(.io, "storage could not be opened for writing")
        case .lmdb(let code, let operation):
            let text = String(cString: mdb_strerror(code))
            switch code {
            case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID, MDB_VERSION_MISMATCH:
                return CouchetteError(.corruption, "\(operation): \(text)")
            case MDB_READERS_FULL, MDB_TXN_FULL:
                return CouchetteError(.busy, "\(operation): \(text)")
            case ENOSPC, EDQUOT:
                return CouchetteError(.full, "\(operation): \(text)")
            default:
                return CouchetteError(.io, "\(operation): \(text)")
            }
        }
    }
}

extension CouchetteError {
    /// Converts any error thrown by the storage layer into a ``CouchetteError``.
    static func wrapping(_ error: any Error) -> any Error {
        if let storage = error as? StorageError { return storage.couchetteError }
        return error
    }
}
