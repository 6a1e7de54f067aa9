// swift-tools-version:6.0
import PackageDescription

/// Every Swift target runs async functions on the caller's executor unless they opt out: a loop-bound
/// actor that awaits a runtime helper stays on its loop thread instead of hopping to the global pool.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
]

let package = Package(
    name: "wsload",
    products: [
        .executable(name: "wsload", targets: ["wsload"]),
        .executable(name: "wsload-bench", targets: ["WSLoadBench"]),
    ],
    targets: [
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        .target(name: "Crypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        .target(name: "FileInput", swiftSettings: swiftSettings),
        .target(name: "HTTP1", swiftSettings: swiftSettings),
        .target(name: "Histogram", dependencies: ["CZlib", "Crypto"], swiftSettings: swiftSettings),
        .target(name: "WebSocket", dependencies: ["Crypto", "HTTP1", "CZlib"], swiftSettings: swiftSettings),
        .target(name: "Runtime", dependencies: ["CLibUV", "COpenSSL", "FileInput"], swiftSettings: swiftSettings),
        .target(name: "WebSocketIO", dependencies: ["Runtime", "WebSocket"], swiftSettings: swiftSettings),
        .target(name: "JSON", swiftSettings: swiftSettings),
        .target(name: "Lifecycle", swiftSettings: swiftSettings),
        .target(name: "Flow", dependencies: ["Crypto", "JSON"], swiftSettings: swiftSettings),
        .target(name: "Profile", dependencies: ["Crypto", "Flow", "HTTP1", "JSON", "Lifecycle", "WebSocket"], swiftSettings: swiftSettings),
        .target(name: "Reporting", dependencies: ["Crypto", "FileInput", "Histogram", "JSON", "Profile"], swiftSettings: swiftSettings),
        .target(name: "Clients", dependencies: ["Crypto", "HTTP1", "JSON", "Lifecycle", "Runtime", "WebSocket", "WebSocketIO"], swiftSettings: swiftSettings),
        .target(name: "EmbeddedServer", dependencies: ["Crypto", "HTTP1", "JSON", "Profile", "Runtime", "WebSocket", "WebSocketIO"], swiftSettings: swiftSettings),
        .target(
            name: "LoadEngine",
            dependencies: ["Clients", "Crypto", "Flow", "Histogram", "HTTP1", "JSON", "Lifecycle", "Profile", "Reporting", "Runtime", "WebSocket"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RunHost",
            dependencies: ["EmbeddedServer", "LoadEngine", "Profile", "Reporting", "Runtime", "WebSocket"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LiveView",
            dependencies: ["Histogram", "HTTP1", "JSON", "LoadEngine", "Profile", "Reporting", "Runtime"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "WSLoadCLI",
            dependencies: ["Runtime", "Clients", "Crypto", "EmbeddedServer", "WebSocket", "HTTP1", "JSON", "LiveView", "LoadEngine", "Profile", "Reporting", "RunHost"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(name: "wsload", dependencies: ["WSLoadCLI"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "WSLoadBench",
            dependencies: ["Runtime", "Clients", "Crypto", "WebSocket", "HTTP1", "Histogram", "LiveView", "Profile", "Reporting", "Flow", "JSON"],
            path: "Benchmarks/WSLoadBench",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "wsload-runtime-probe",
            dependencies: ["Runtime"],
            path: "Tests/RuntimeProbe",
            swiftSettings: swiftSettings
        ),
        .target(name: "TestSupport", dependencies: ["HTTP1", "Runtime"], path: "Tests/TestSupport"),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "TestSupport", "wsload-runtime-probe"]),
        .testTarget(
            name: "WSLoadCLITests",
            dependencies: ["WSLoadCLI", "TestSupport", "Runtime", "Clients", "Crypto", "HTTP1", "WebSocket", "EmbeddedServer", "JSON", "LiveView", "LoadEngine", "Profile", "Reporting", "RunHost"]
        ),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"]),
        .testTarget(
            name: "LiveViewTests",
            dependencies: ["LiveView", "Histogram", "HTTP1", "JSON", "LoadEngine", "Profile", "Reporting", "Runtime", "TestSupport"]
        ),
        .testTarget(name: "FlowTests", dependencies: ["Flow", "JSON", "Crypto"]),
        .testTarget(name: "EmbeddedServerTests", dependencies: ["EmbeddedServer", "Crypto", "HTTP1", "JSON", "Runtime", "TestSupport", "WebSocket", "WebSocketIO"]),
        .testTarget(name: "HistogramTests", dependencies: ["Crypto", "Histogram", "Runtime", "TestSupport"]),
        .testTarget(
            name: "LoadEngineTests",
            dependencies: ["LoadEngine", "Clients", "Crypto", "EmbeddedServer", "Flow", "JSON", "Profile", "Reporting", "Histogram", "Runtime", "RunHost", "TestSupport", "WSLoadCLI", "WebSocket"]
        ),
        .testTarget(name: "ClientsTests", dependencies: ["Clients", "Crypto", "EmbeddedServer", "Flow", "JSON", "Lifecycle", "Profile", "Runtime", "WebSocket", "TestSupport"]),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "Crypto"]),
        .testTarget(name: "SourceRulesTests", dependencies: ["TestSupport"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "Crypto", "Runtime"]),
        .testTarget(name: "WebSocketIOTests", dependencies: ["WebSocketIO", "WebSocket", "Runtime", "TestSupport"]),
    ]
)

// libFuzzer targets (Fuzz/README.md), declared only when WSLOAD_FUZZ=1 so a normal build and test never
// see them. scripts/fuzz.sh builds them with -sanitize=fuzzer,address in its own scratch path
// (.build/fuzz). Each calls LLVMFuzzerRunDriver from its own main (SwiftPM points `main` at the
// executable's entry point; lld lets that win over libFuzzer's main).
if Context.environment["WSLOAD_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("WebSocketFrames", ["WebSocket"]),
        ("WebSocketConnection", ["WebSocket"]),
        ("PerMessageDeflate", ["WebSocket"]),
        ("Handshake", ["HTTP1", "WebSocket"]),
        ("HTTPHead", ["HTTP1"]),
        ("HTTPBody", ["HTTP1"]),
        ("HTTPFields", ["HTTP1"]),
        ("JSON", ["JSON"]),
        ("Profile", ["Profile"]),
        ("Histogram", ["Crypto", "Histogram"]),
        ("Report", ["JSON", "Reporting"]),
        ("ResumeData", ["Clients"]),
        ("SessionJournal", ["Clients", "Runtime"]),
    ]
    package.targets += [
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], path: "Fuzz/Support"),
    ]
    package.targets += fuzzTargets.map { target in
        .executableTarget(
            name: "Fuzz\(target.name)", dependencies: ["FuzzSupport"] + target.dependencies, path: "Fuzz/Targets/\(target.name)",
            linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
        )
    }
}
