// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Couchette",
    products: [
        .library(name: "Couchette", targets: ["Couchette"]),
        .executable(name: "couchette", targets: ["CouchetteCLI"]),
        .executable(name: "tasks-example", targets: ["TasksExample"]),
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
        .target(
            name: "Couchette",
            dependencies: ["CLMDB", "CCrypto"]
        ),
        .executableTarget(
            name: "CouchetteCLI",
            dependencies: ["Couchette"],
            path: "Sources/couchette"
        ),
        .executableTarget(
            name: "TasksExample",
            dependencies: ["Couchette"],
            path: "Examples/Tasks"
        ),
        .testTarget(
            name: "CouchetteTests",
            dependencies: ["Couchette", "CouchetteCLI"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
