import LocifyRules
import Testing

@Suite("StorageObjectReference")
struct StorageObjectReferenceTests {
    static let bucket = "locify-test.appspot.com"

    @Test("parses the three URL forms")
    func parsesForms() {
        #expect(
            StorageObjectReference.parse(
                "https://firebasestorage.googleapis.com/v0/b/locify-test.appspot.com/o/locations%2Fuid-1%2Floc%2Fphoto%20one.jpg?alt=media&token=abc")
                == StorageObjectReference(bucket: Self.bucket, path: "locations/uid-1/loc/photo one.jpg"))
        #expect(
            StorageObjectReference.parse("https://firebasestorage.googleapis.com/v0/b/locify-test.appspot.com/o/categories%2Fu%2Fc.png#frag")
                == StorageObjectReference(bucket: Self.bucket, path: "categories/u/c.png"))
        #expect(
            StorageObjectReference.parse("gs://locify-test.appspot.com/locations/uid-1/a%20b.jpg")
                == StorageObjectReference(bucket: Self.bucket, path: "locations/uid-1/a%20b.jpg"))
        #expect(
            StorageObjectReference.parse("https://storage.googleapis.com/locify-test.appspot.com/locations/uid-1/Z%C3%BCrich.jpg")
                == StorageObjectReference(bucket: Self.bucket, path: "locations/uid-1/Zürich.jpg"))
        #expect(
            StorageObjectReference.parse("HTTPS://FirebaseStorage.GoogleAPIs.com/v0/b/locify-test.appspot.com/o/a%2Fb")
                == StorageObjectReference(bucket: Self.bucket, path: "a/b"))
    }

    @Test("decodes percent-escapes exactly once")
    func decodesOnce() {
        #expect(
            StorageObjectReference.parse("https://firebasestorage.googleapis.com/v0/b/b/o/locations%2Fu%2F100%2525.jpg")?.path
                == "locations/u/100%25.jpg")
    }

    @Test(
        "refuses other hosts, schemes and malformed URLs",
        arguments: [
            "http://firebasestorage.googleapis.com/v0/b/b/o/a", "https://evil.example.com/v0/b/b/o/a",
            "https://firebasestorage.googleapis.com.evil.com/v0/b/b/o/a", "https://user@firebasestorage.googleapis.com/v0/b/b/o/a",
            "https://firebasestorage.googleapis.com:8443/v0/b/b/o/a", "https://firebasestorage.googleapis.com/v1/b/b/o/a",
            "https://firebasestorage.googleapis.com/v0/b/b/a", "https://firebasestorage.googleapis.com/v0/b/b/o/",
            "https://firebasestorage.googleapis.com/v0/b/b/o/a%2", "https://firebasestorage.googleapis.com/v0/b/b/o/a%ZZ",
            "https://firebasestorage.googleapis.com/v0/b/b/o/%FF", "https://storage.googleapis.com/bucket-only",
            "https://storage.googleapis.com/b/", "gs://bucket", "gs:///path", "gs://b/", "ftp://b/p", "", "locations/u/a.jpg",
        ])
    func refuses(url: String) {
        #expect(StorageObjectReference.parse(url) == nil)
    }

    @Test("objects inside the user's folders of the configured bucket may be deleted")
    func inside() {
        for path in ["locations/uid-1/loc/a.jpg", "categories/uid-1/cat/icon.png", "locations/uid-1/a.jpg"] {
            #expect(StorageObjectReference(bucket: Self.bucket, path: path).isInsideUserFolders(bucket: Self.bucket, uid: "uid-1"))
        }
    }

    @Test(
        "everything else is left alone",
        arguments: [
            ("other-bucket", "locations/uid-1/a.jpg"), (bucket, "locations/uid-2/a.jpg"), (bucket, "locations/uid-1x/a.jpg"),
            (bucket, "locations/uid-1"), (bucket, "locations/uid-1/"), (bucket, "locations/uid-1//a.jpg"),
            (bucket, "locations/uid-1/./a.jpg"), (bucket, "locations/uid-1/../uid-2/a.jpg"), (bucket, "locations/uid-1/a/.."),
            (bucket, "/locations/uid-1/a.jpg"), (bucket, "images/uid-1/a.jpg"), (bucket, "Locations/uid-1/a.jpg"),
            (bucket, "users/uid-1/locations/uid-1/a.jpg"), (bucket, "locations/UID-1/a.jpg"),
        ])
    func outside(bucket: String, path: String) {
        #expect(!StorageObjectReference(bucket: bucket, path: path).isInsideUserFolders(bucket: Self.bucket, uid: "uid-1"))
    }

    @Test("a URL's decoded path is checked: encoded traversal is refused")
    func encodedTraversal() throws {
        let reference = try #require(
            StorageObjectReference.parse("https://firebasestorage.googleapis.com/v0/b/locify-test.appspot.com/o/locations%2Fuid-1%2F%2E%2E%2Fuid-2%2Fa.jpg"))
        #expect(reference.path == "locations/uid-1/../uid-2/a.jpg")
        #expect(!reference.isInsideUserFolders(bucket: Self.bucket, uid: "uid-1"))
    }

    @Test("odd uids never match")
    func oddUids() {
        let reference = StorageObjectReference(bucket: Self.bucket, path: "locations/../a.jpg")
        #expect(!reference.isInsideUserFolders(bucket: Self.bucket, uid: ".."))
        #expect(!StorageObjectReference(bucket: Self.bucket, path: "locations//a.jpg").isInsideUserFolders(bucket: Self.bucket, uid: ""))
        #expect(!StorageObjectReference(bucket: Self.bucket, path: "locations/a/b/c.jpg").isInsideUserFolders(bucket: Self.bucket, uid: "a/b"))
        // Canonically equivalent but different bytes: "é" precomposed vs decomposed.
        #expect(
            !StorageObjectReference(bucket: Self.bucket, path: "locations/caf\u{E9}/a.jpg").isInsideUserFolders(bucket: Self.bucket, uid: "cafe\u{301}"))
    }

    @Test("object names: 1-1,024 bytes of UTF-8 without control characters")
    func objectNameProblems() {
        #expect(StorageObjectReference.objectNameProblem("locations/u/a.jpg") == nil)
        #expect(StorageObjectReference.objectNameProblem(String(repeating: "a", count: 1024)) == nil)
        #expect(StorageObjectReference.objectNameProblem(String(repeating: "a", count: 1025)) == .tooLong)
        // 342 three-byte characters are 1,026 bytes, though only 342 characters.
        #expect(StorageObjectReference.objectNameProblem(String(repeating: "€", count: 342)) == .tooLong)
        #expect(StorageObjectReference.objectNameProblem(String(repeating: "€", count: 341)) == nil)
        for control in ["\u{0}", "\n", "\r", "\u{7F}", "\u{85}", "\u{9F}"] {
            #expect(StorageObjectReference.objectNameProblem("a\(control)b") == .controlCharacter)
        }
        #expect(StorageObjectReference.objectNameProblem("") == .empty)
        let parsed = StorageObjectReference.parse(
            "https://firebasestorage.googleapis.com/v0/b/bucket/o/locations%2Fu%2Fa%00b?alt=media")
        #expect(parsed?.path == "locations/u/a\u{0}b")
        #expect(parsed.flatMap { StorageObjectReference.objectNameProblem($0.path) } == .controlCharacter)
    }

    @Test("the user's folders are locations/<uid>/ and categories/<uid>/, a record's folder inside them")
    func userFolders() {
        #expect(UserStorageFolder.allCases.map { $0.prefix(uid: "u1") } == ["locations/u1/", "categories/u1/"])
        #expect(UserStorageFolder.categories.prefix(uid: "u1", record: "abc") == "categories/u1/abc/")
        for folder in UserStorageFolder.allCases {
            let reference = StorageObjectReference(bucket: "bucket", path: folder.prefix(uid: "u1", record: "abc") + "photo.jpg")
            #expect(reference.isInsideUserFolders(bucket: "bucket", uid: "u1"))
        }
    }
}
