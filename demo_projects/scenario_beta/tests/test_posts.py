"""Acceptance tests for post tags and the tag index."""

from app.posts import TagIndex, parse_tags, read_post


def test_tags_are_read_from_the_front_matter():
    assert parse_tags("python, testing") == ["python", "testing"]


def test_posts_are_listed_under_their_second_tag():
    index = TagIndex()
    index.add(read_post("first-post", {"tags": "python, testing"}))
    assert index.posts_tagged("testing") == ["first-post"]


def test_a_post_without_tags_is_listed_nowhere():
    index = TagIndex()
    index.add(read_post("draft", {}))
    assert index.tags() == []


def test_a_single_tag_needs_no_comma():
    assert read_post("notes", {"tags": "python"}).tags == ("python",)
