"""Blog posts, their tags, and the list of posts under each tag."""

from __future__ import annotations

from dataclasses import dataclass


def parse_tags(raw: str) -> list[str]:
    """Split a post's front-matter ``tags:`` value ("python, testing") into its tags."""
    return [tag for tag in raw.split(",") if tag]


@dataclass(frozen=True)
class Post:
    slug: str
    tags: tuple[str, ...]


def read_post(slug: str, front_matter: dict[str, str]) -> Post:
    """A post as its front matter describes it; a post without tags has none."""
    return Post(slug=slug, tags=tuple(parse_tags(front_matter.get("tags", ""))))


class TagIndex:
    """Posts by tag, in the order they were added."""

    def __init__(self) -> None:
        self._posts: dict[str, list[str]] = {}

    def add(self, post: Post) -> None:
        for tag in post.tags:
            self._posts.setdefault(tag, []).append(post.slug)

    def posts_tagged(self, tag: str) -> list[str]:
        return list(self._posts.get(tag, []))

    def tags(self) -> list[str]:
        return sorted(self._posts)
