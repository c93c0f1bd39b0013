// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Couchette",
    products: [
        .library(name: "Couchette", targets: ["Couchette"]),
        .executable(name: "couchette", targets: ["CouchetteCLI"]),
        .executable(name: "tasks-example", targets: ["TasksExample"]),
        .executable(name: "todo-models-example", targets: ["TodoModelsExample"]),
        .executable(name: "todo", targets: ["TodoExample"]),
        .executable(name: "couchette-bench", targets: ["CouchetteBench"]),
        .executable(name: "couchette-fuzz", targets: ["CouchetteFuzz"]),
    ],
    targets: [
        // System libraries from Debian packages; nothing is vendored.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CEditLine",
            pkgConfig: "libedit",
            providers: [.apt(["libedit-dev"])]
        ),
        // civetweb ships no pkg-config file: the module map links `civetweb` directly.
        .systemLibrary(
            name: "CCivetWeb",
            providers: [.apt(["libcivetweb-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // zlib: gzip-encoded parts of multipart attachments (CouchDB sends compressible ones gzipped).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libstemmer ships no pkg-config file: the module map links `stemmer` directly.
        .systemLibrary(
            name: "CStemmer",
            providers: [.apt(["libstemmer-dev"])]
        ),
        .target(
            name: "Couchette",
            dependencies: ["CLMDB", "CCrypto", "CCivetWeb", "CCurl", "CStemmer", "CZlib"]
        ),
        .executableTarget(
            name: "CouchetteCLI",
            dependencies: ["Couchette", "CEditLine"],
            path: "Sources/couchette"
        ),
        // The benchmark: Couchette against raw LMDB and SQLite (the baseline only).
        .target(
            name: "CouchetteBenchmarks",
            dependencies: ["Couchette", "CLMDB", "CSQLite"]
        ),
        .executableTarget(
            name: "CouchetteBench",
            dependencies: ["CouchetteBenchmarks"],
            path: "Sources/couchette-bench"
        ),
        // The libFuzzer harness: `scripts/fuzz TARGET [SECONDS]` builds it with the fuzzer and
        // AddressSanitizer; the plain build replays inputs (see Sources/couchette-fuzz).
        .executableTarget(
            name: "CouchetteFuzz",
            dependencies: ["Couchette"],
            path: "Sources/couchette-fuzz"
        ),
        .executableTarget(
            name: "TasksExample",
            dependencies: ["Couchette"],
            path: "Examples/Tasks"
        ),
        .executableTarget(
            name: "TodoModelsExample",
            dependencies: ["Couchette"],
            path: "Examples/TodoModels"
        ),
        .executableTarget(
            name: "TodoExample",
            dependencies: ["Couchette"],
            path: "Examples/Todo"
        ),
        .testTarget(
            name: "CouchetteTests",
            dependencies: ["Couchette", "CouchetteCLI", "CouchetteBenchmarks", "TodoExample"],
            // Read from the source tree through #filePath (see Fixtures in TestSupport.swift).
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
